"""hephaestus: a GitOps reconciler and job runner for Kafka Connect + Debezium fleets."""

__version__ = "0.1.0"
