"""The aoti family's pipeline: export, package, load (fresh and warm), compare, time.

Worker side: :mod:`laya_tui.aoti.pipeline` imports torch inside its functions; the other
modules here (failure descriptions, results schema, cache paths) are plain Python.
"""
