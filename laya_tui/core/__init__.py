"""The run core, standard library only, shared by every front end: signals, events, the
runner and its worker handles, the result cache, the run trace (docs/architecture.md,
'Layers and import rules')."""
