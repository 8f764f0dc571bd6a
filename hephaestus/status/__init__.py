"""One view of the fleet: `hephaestus status` and the Prometheus exporter."""
