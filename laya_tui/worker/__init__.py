"""The worker process (``python -m laya_tui.worker``): loads probe files, runs cells,
streams signals. It is the only place family code and heavy libraries are imported."""
