"""The snapshot feature."""
