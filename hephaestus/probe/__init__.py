"""The freshness probe: each sink's probe path (routes, pure), what was read back (read, edge)
and what it means (model, pure). See docs/freshness.md."""
