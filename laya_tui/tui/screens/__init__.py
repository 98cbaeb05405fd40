"""Screens: overview, signal detail, lowering matrix, runs over time, help."""
