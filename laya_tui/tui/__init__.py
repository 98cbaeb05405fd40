"""The Textual dashboard: screens, widgets, messages and styles (DESIGN §1, §6).

Build the app with :func:`laya_tui.tui.app.build_app`; nothing here imports torch & co.
"""
