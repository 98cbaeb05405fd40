"""Widgets of the dashboard (each in its own module)."""
