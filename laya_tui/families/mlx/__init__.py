"""The MLX family: a tiny encoder in MLX and in torch, compared forward for forward."""
