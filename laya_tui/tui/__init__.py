"""The Textual dashboard: screens, widgets, messages and styles (docs/architecture.md,
'Processes and the one rule', 'The dashboard').

Build the app with :func:`laya_tui.tui.factory.build_app`; nothing here imports torch & co.
"""
