"""`hephaestus job list|run`: the named jobs Helm hooks and cron run."""

from __future__ import annotations

import click

from hephaestus.errors import HephaestusError


@click.group()
def job() -> None:
    """Named jobs, as Helm hooks and cron run them."""


@job.command("list")
def job_list() -> None:
    """List the jobs and what each runs, then the reference's job names and what they map to."""
    from hephaestus.jobs import ALIASES, JOBS

    for j in JOBS.values():
        click.echo(f"{j.name:28} hephaestus {' '.join(j.argv):40} {j.help}")
    click.echo("\nthe reference's job names:")
    for a in ALIASES.values():
        click.echo(f"{a.name:42} = {a.job:26} hephaestus {' '.join(a.argv)}")


def complete_jobs(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of `job run NAME`: our job names and the reference's."""
    from hephaestus.jobs import ALIASES, JOBS

    return sorted(n for n in {*JOBS, *ALIASES} if n.startswith(incomplete))


@job.command("run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("name", shell_complete=complete_jobs)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def job_run(name: str, args: tuple[str, ...]) -> None:
    """Run job NAME (ours or the reference's name for it); extra ARGS are passed to its command."""
    from hephaestus.jobs import command_line

    argv = command_line(name)
    if argv is None:
        raise HephaestusError(f"no job {name!r}; `hephaestus job list` shows them")
    root = click.get_current_context().find_root().command
    root.main(args=[*argv, *args], prog_name="hephaestus", standalone_mode=False)


commands = [job]
