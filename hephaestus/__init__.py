"""hephaestus: a GitOps reconciler and job runner for Kafka Connect + Debezium fleets."""

__version__ = "0.1.0"


def _no_httpx_cli() -> None:
    """httpx imports its own command-line tool (click, rich, pygments) whenever it is imported:
    ~40 ms on every hephaestus command. Its `main` is the only thing there; hephaestus never
    calls it, so the module is stood in for before httpx is first imported."""
    import sys
    import types

    def main() -> None:  # httpx re-exports it (and sets its __module__)
        raise SystemExit("httpx's command-line tool is not loaded inside hephaestus")

    if "httpx" not in sys.modules and "httpx._main" not in sys.modules:
        stub = types.ModuleType("httpx._main", "hephaestus: httpx's CLI is not loaded")
        stub.main = main  # type: ignore[attr-defined]
        sys.modules["httpx._main"] = stub


_no_httpx_cli()
