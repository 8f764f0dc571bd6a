"""The console entry point: `--version` answered before the CLI (click and every command) is
imported, since scripts and image checks call it to see what is installed."""

from __future__ import annotations

import sys

from hephaestus import __version__


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        print(f"hephaestus, version {__version__}")  # click's version_option prints the same line
        return
    from hephaestus.cli import main as cli_main

    cli_main()
