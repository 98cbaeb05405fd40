"""``python -m laya_tui.worker``: one probe worker process."""

import sys

from laya_tui.worker.main import main

sys.exit(main())
