"""The accuracy feature."""
