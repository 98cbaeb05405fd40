"""The aoti family's pipeline: export, package, load (fresh and warm), compare, time.

Worker side: ``pipeline`` (the steps in order), ``packaging`` (export and package, or the
cached package), ``targets`` (what is packaged), ``toolchain`` (compiler facts, cache key),
``exported`` (ranges, mixed-dtype matmuls) and ``measure``
(latency, deltas) import torch inside their functions. ``failure`` and ``results`` are
plain Python.
"""
