"""``--cluster ADDRESS``: a run's cells on a Ray cluster, each where its hardware is
(docs/cluster.md).

The driver side (this package) may import ``ray``, never torch, TileLang or MLX: a node runs
the same worker process as a local run (``python -m laya_tui.worker``), started and relayed
by one Ray actor per family and node (:mod:`laya_tui.cluster.node_actor`).
"""
