"""The heal feature."""
