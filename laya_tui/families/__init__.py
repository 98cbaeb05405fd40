"""Worker-side family code (explain regions, TileLang lowering, AOTInductor, MLX): heavy
imports allowed, never imported by the core, the report or a front end."""
