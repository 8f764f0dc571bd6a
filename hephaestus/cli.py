"""The root of the CLI: the group, its options, and the one place errors become exit codes.

Every command lives in `hephaestus.commands.<feature>` (they print; this module catches
HephaestusError once and maps it). Exit codes are stable because Helm hooks and cron read
them: 0 ok, 1 error, 2 drift/refused when a flag asks for it.
"""

from __future__ import annotations

import os
import sys

import click

from hephaestus import __version__
from hephaestus.commands import LazyGroup
from hephaestus.commands.common import EXIT_ERROR, EXIT_OK
from hephaestus.errors import HephaestusError


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hephaestus")
@click.option("--verbose", "-v", is_flag=True, help="Log each HTTP request (method, path, status; never bodies).")
def cli(verbose: bool) -> None:
    """GitOps reconciler and job runner for Kafka Connect + Debezium fleets."""
    import logging  # not for --version and --help

    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="hephaestus: %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    for noisy in ("httpx", "httpcore", "slack_sdk"):  # their DEBUG lines carry headers and URLs
        logging.getLogger(noisy).setLevel(logging.WARNING)


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; everything it prints passes the redactor."""
    from hephaestus.commands.streams import redacted_output

    with redacted_output():
        return _run(argv)


def _run(argv: list[str] | None) -> int:
    """HephaestusError is caught here, once."""
    try:
        cli.main(args=argv, prog_name="hephaestus", standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return EXIT_ERROR  # usage errors too: 2 means drift here
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return EXIT_ERROR
    except HephaestusError as exc:
        click.echo(f"error: {exc}", err=True)
        return exc.exit_code
    except Exception as exc:  # noqa: BLE001 - a bug: one line for the user, never a raw traceback
        click.echo(
            f"error: unexpected {type(exc).__name__}: {exc} (a bug in hephaestus; HEPHAESTUS_TRACEBACK=1 shows where)",
            err=True,
        )
        if os.environ.get("HEPHAESTUS_TRACEBACK") == "1":
            import traceback

            traceback.print_exc()  # to the redacted stderr
        return EXIT_ERROR
    return EXIT_OK


def main() -> None:
    """Console entry point."""
    sys.exit(run())
