"""The ksql feature."""
