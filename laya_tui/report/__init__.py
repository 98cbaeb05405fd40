"""The report and what is built from it: the document, gates, baseline, JUnit, Markdown,
HTML, merge and diff. Standard library only; imports nothing but :mod:`laya_tui.core`."""
