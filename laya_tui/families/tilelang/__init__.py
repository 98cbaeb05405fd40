"""The TileLang lowering matrix: find kernels, lower/build/run one cell, extract diagnostics.

``discover`` is pure standard library (probe discovery and ``--list`` call it). The other
modules run inside workers and import TileLang, TVM and torch inside their functions.
"""
