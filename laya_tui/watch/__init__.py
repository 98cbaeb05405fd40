"""Watch mode: what changed on disk, and the re-run engine the front ends drive."""
