"""`hephaestus graph`: the lineage of a project (model, lineage, connectors, ksqlflow, live:
pure) drawn into one self-contained HTML page (render), from git and, with --live, the
clusters and the audit journal (run, journal)."""
