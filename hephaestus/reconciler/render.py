"""Plans and outcomes as text (a readable diff), json (machines) or markdown (PR comments). Pure."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from hephaestus.publications.change import PublicationChange
from hephaestus.reconciler.outcome import ClusterOutcome, StepResult
from hephaestus.reconciler.plan import KeyChange, Plan, Step
from hephaestus.secrets import digest, is_placeholder, is_sensitive, mask_value

Style = Callable[[str, str], str]  # (text, action) -> text, e.g. colour on a terminal
SYMBOL = {
    "create": "+",
    "update": "~",
    "rename": ">",
    "move": ">",
    "delete": "-",
    "state": "*",
    "restart": "^",
    "protected": "!",
    "unmanaged": "?",
    "unchanged": "=",
}


def plain(text: str, action: str) -> str:
    return text


def summary(plan: Plan) -> str:
    c = plan.counts()
    renames = f"{c['rename']} to rename, " if c["rename"] else ""
    renames += f"{c['move']} to move in, " if c["move"] else ""
    adopt = f", {len(plan.adopt)} to adopt" if plan.adopt else ""
    pubs = f", {len(plan.publications)} publications to change" if plan.publications else ""
    pubs += f", {len(plan.held)} held" if plan.held else ""
    states = f"{c['state']} to pause/resume/stop, " if c["state"] else ""
    states += f"{c['restart']} to restart, " if c["restart"] else ""
    return (
        f"{c['create']} to create, {c['update']} to update, {renames}{states}{c['delete']} to delete, "
        f"{c['protected']} protected, {c['unmanaged']} unmanaged, {c['unchanged']} unchanged{adopt}{pubs}"
    )


def _value(key: str, value: str | None) -> str:
    return json.dumps(mask_value(key, value))


def _shown(key: str, value: str | None) -> str | None:
    """A secret's literal value as its short digest (a change still shows), anything else masked."""
    if value is not None and is_sensitive(key) and not is_placeholder(value):
        return digest(value)
    return mask_value(key, value)


def _change_line(ch: KeyChange) -> str:
    if is_sensitive(ch.key) and ch.before is not None and ch.after is not None:
        return f"  {ch.key} changed ({_shown(ch.key, ch.before)} -> {_shown(ch.key, ch.after)})"
    if ch.before is None:
        return f"+ {ch.key}: {_value(ch.key, ch.after)}"
    if ch.after is None:
        return f"- {ch.key}: {_value(ch.key, ch.before)}"
    return f"  {ch.key}: {_value(ch.key, ch.before)} -> {_value(ch.key, ch.after)}"


VERB = {"RUNNING": "resume", "PAUSED": "pause", "STOPPED": "stop"}


def _step_lines(step: Step) -> list[str]:
    # A state step says what it does: "resume" is what a reverted pause plans.
    verb = VERB.get(step.target_state, step.action) if step.action == "state" else step.action
    head = f"{SYMBOL[step.action]} {verb} {step.name}"
    if step.reason:
        head += f"  ({step.reason})"
    if step.risk == "destructive":
        head += "  [DESTRUCTIVE]"
    why = [f"    {e.marked()}" for e in step.effects]
    return [head] + why + [f"    {_change_line(ch)}" for ch in step.changes]


def text(outcomes: Sequence[ClusterOutcome], style: Style = plain) -> str:
    out: list[str] = []
    for o in outcomes:
        out.append(style(f"cluster {o.cluster} ({o.url})", "header"))
        out += [f"  {line}" for line in _cluster_lines(o, style)]
    return "\n".join(out) + "\n"


def _cluster_lines(o: ClusterOutcome, style: Style) -> list[str]:
    if o.plan is None:
        return [style(f"error: {o.error}", "error")]
    lines = _plan_lines(o.plan, style)
    lines.append(f"plan: {summary(o.plan)}  [{o.requests} requests, {o.writes} writes]")
    if o.refused:
        lines.append(style(f"refused: {o.plan.refused}", "error"))
    lines += _invalid_lines(o.invalid, style)
    lines += _rollout_lines(o)
    lines += _result_lines(o, style)
    if o.error:
        lines.append(style(f"error: {o.error}", "error"))
    return lines


def _plan_lines(plan: Plan, style: Style) -> list[str]:
    """What the plan would do: publications first (they are changed before any write), then
    each step with the topics it needs, then what is unhealthy, adopted and warned about."""
    lines = [style(f"~ {ch.describe()}", "update") for ch in plan.publications]
    for step in plan.steps:
        if step.action != "unchanged":
            lines += [style(line, step.action) for line in _step_lines(step)]
            lines += [style(f"    {n.describe()}", step.action) for n in plan.needs_of(step.name)]
    for b in plan.backfills:
        lines += [style(f"+ {b.describe()}", "update")] + [style(f"    {e.describe()}", "update") for e in b.effects]
    lines += [style(f"unhealthy {u.name}: {u.reason}", "error") for u in plan.health]
    lines += [style(h.describe(), "error") for h in plan.held]
    lines += [style(f"schema: {f.describe()}", "error") for f in plan.schema]
    if plan.adopt:
        lines.append(f"adopt (record as owned, no write to Connect): {_listed(plan.adopt, 10)}")
    return lines + [style(f"warning: {w}", "protected") for w in plan.warnings]


def _invalid_lines(invalid: dict[str, dict[str, tuple[str, ...]]], style: Style) -> list[str]:
    lines = [
        style(f"invalid {name}: {key}: {'; '.join(errs)}", "error")
        for name, keys in sorted(invalid.items())
        for key, errs in sorted(keys.items())
    ]
    if invalid:
        lines.append(style("nothing applied: fix the invalid configs first", "error"))
    return lines


def _result_lines(o: ClusterOutcome, style: Style) -> list[str]:
    """What each step did (database steps, writes, follow-ups), then the rollback's steps."""
    lines = [_result_line(r, "", "unchanged", style) for r in (*o.prepared, *o.results, *o.followups)]
    return lines + [_result_line(r, "rollback ", "rename", style) for r in o.rollback]


def _result_line(r: StepResult, prefix: str, ok_style: str, style: Style) -> str:
    return style(f"{'ok' if r.ok else 'FAILED'} {prefix}{r.action} {r.name}: {r.detail}", ok_style if r.ok else "error")


def _rollout_lines(o: ClusterOutcome) -> list[str]:
    """The rollout's shape and gates and its stages (a dry run), then what each stage's gate said."""
    if not o.rollout:
        return []
    stages = [f"  {label}: {_few(names)}" for label, names in o.stages]
    return [f"rollout: {o.rollout}", *stages, *(f"  {line}" for line in o.report)]


def _few(names: Sequence[str], shown: int = 5) -> str:
    return f"{len(names)}: " + _listed(names, shown)


def _listed(names: Sequence[str], shown: int) -> str:
    more = f", … ({len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def as_dict(o: ClusterOutcome) -> dict[str, Any]:
    return {
        "cluster": o.cluster,
        "url": o.url,
        "error": o.error or None,
        **_plan_dict(o.plan),
        "applied": o.applied,
        "invalid": {n: {k: list(v) for k, v in keys.items()} for n, keys in o.invalid.items()},
        "results": [vars(r) for r in (*o.prepared, *o.results, *o.followups)],
        "rollout": _rollout_dict(o) if o.rollout else None,
        "requests": o.requests,
        "writes": o.writes,
    }


def _plan_dict(plan: Plan | None) -> dict[str, Any]:
    """The plan's fields of a cluster's outcome (empty when it could not be planned)."""
    if plan is None:
        empty: dict[str, Any] = {
            k: [] for k in ("refusals", "health", "adopt", "warnings", "needs", "steps", "backfills", "schema", "held")
        }
        return {**empty, "refused": None, "counts": {}, "publications": []}
    return {
        "refused": plan.refused or None,
        "refusals": list(plan.refusals),
        "counts": plan.counts(),
        "health": [{"name": u.name, "reason": u.reason} for u in plan.health],
        "adopt": list(plan.adopt),
        "warnings": list(plan.warnings),
        # Topics a sink needs, created just before it is sent (reconciler.sinktopics).
        "needs": [
            {"sink": n.sink, "topics": list(n.topics), "source": n.source, "why": n.describe()} for n in plan.needs
        ],
        # As in the text: a connector in sync is a count, not a step (at 5,000 connectors the
        # unchanged ones were most of a no-op plan's time, spent encoding what nobody reads).
        "steps": [_step_dict(s) for s in plan.steps if s.action != "unchanged"],
        "publications": [_publication_dict(ch) for ch in plan.publications],
        "backfills": [
            {"source": b.source, "tables": list(b.tables), "why": b.why, "effects": [e.describe() for e in b.effects]}
            for b in plan.backfills
        ],
        # Sinks held back, the rest written: their topics do not exist yet (issue 48).
        "held": [{"name": h.name, "why": h.why, "migration": h.migration or None} for h in plan.held],
        # A source's schema drift, by its effect on data (hephaestus.drift; issue 45).
        "schema": [
            {"effect": f.code, "subject": f.subject, "pipeline": f.pipeline, "why": f.why, "sinks": list(f.sinks)}
            for f in plan.schema
        ],
    }


def _publication_dict(ch: PublicationChange) -> dict[str, Any]:
    return {
        "database": ch.database,
        "publication": ch.publication,
        "add": list(ch.add),
        "drop": list(ch.drop),
        "for": list(ch.connectors),
    }


def _rollout_dict(o: ClusterOutcome) -> dict[str, Any]:
    return {
        "shape": o.rollout,
        "stages": [{"stage": label, "connectors": list(names)} for label, names in o.stages],
        "report": list(o.report),
        "rollback": [vars(r) for r in o.rollback],
    }


def _step_dict(s: Step) -> dict[str, Any]:
    return {
        "action": s.action,
        "name": s.name,
        "connector_class": s.connector_class,
        "reason": s.reason or None,
        "origin": s.origin or None,
        "renamed_from": s.renamed_from or None,
        "moved_from": s.moved_from or None,
        "risk": s.risk or None,
        "effects": [
            {"effect": e.code, "why": e.why, "destructive": e.destructive, "fleet_rule": e.invariant} for e in s.effects
        ],
        "changes": [
            {"key": c.key, "before": _shown(c.key, c.before), "after": _shown(c.key, c.after)} for c in s.changes
        ],
    }


def as_json(outcomes: Sequence[ClusterOutcome]) -> str:
    return json.dumps({"clusters": [as_dict(o) for o in outcomes]}, indent=2, sort_keys=True) + "\n"


def markdown(outcomes: Sequence[ClusterOutcome]) -> str:
    """For a PR comment: everything that came from a cluster or a file (names, classes,
    reasons, values) is shown as inline code or escaped text, so it cannot inject links,
    images or table cells."""
    out: list[str] = []
    for o in outcomes:
        out.append(f"### Kafka Connect cluster {md_code(o.cluster)}\n")
        if o.plan is None:
            out.append(f"**error:** {md_text(o.error)}\n")
            continue
        out += [f"Plan: {summary(o.plan)}.\n", *_md_notes(o, o.plan), *_md_rollout(o), *_md_steps(o.plan)]
    return "\n".join(out) + "\n"


def _md_notes(o: ClusterOutcome, plan: Plan) -> list[str]:
    """Errors, refusal, warnings, adoptions, health, publications, back-fills, schema drift."""
    out = [f"**error:** {md_text(o.error)}\n"] if o.error else []
    out += [f"> **refused:** {md_text(plan.refused)}\n"] if plan.refused else []
    out += [f"> **held:** {md_code(h.name)}: {md_text(h.why)}\n" for h in plan.held]
    out += [f"> **warning:** {md_text(w)}\n" for w in plan.warnings]
    if plan.adopt:
        out.append(f"Adopted (recorded as owned, no write): {', '.join(md_code(n) for n in plan.adopt)}\n")
    if plan.health:
        out += ["**unhealthy:**\n", *(f"- {md_code(u.name)}: {md_text(u.reason)}" for u in plan.health), ""]
    out += [f"- publication {md_code(ch.name)}: {md_text(ch.describe().split(': ', 1)[1])}" for ch in plan.publications]
    out += [f"- {md_text(b.describe())}" for b in plan.backfills]
    return out + [f"> **schema:** {md_text(f.describe())}\n" for f in plan.schema]


def _md_rollout(o: ClusterOutcome) -> list[str]:
    if not o.rollout:
        return []
    stages = [f"- {md_text(label)}: {', '.join(md_code(n) for n in names)}" for label, names in o.stages]
    return [f"Rollout: {md_text(o.rollout)}\n", *stages, *(f"- {md_text(line)}" for line in o.report), ""]


def _md_steps(plan: Plan) -> list[str]:
    changed = [s for s in plan.steps if s.action != "unchanged"]
    if not changed:
        return []
    rows = [
        f"| {SYMBOL[s.action]} | {s.action} | {_md_risk(s)} | {md_code(s.name)} | {_md_details(s)} |" for s in changed
    ]
    return ["| | action | risk | connector | details |\n|---|---|---|---|---|", *rows, ""]


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~&:])")  # ":" too: no autolinked URL


def md_text(text: str) -> str:
    """Plain text on one line with every markdown/HTML control character escaped."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def md_code(text: str) -> str:
    """Inline code that no backtick in `text` can close early; `|` escaped for tables
    (GitHub splits table cells on it even inside code)."""
    flat = " ".join(text.split())
    fence = "`" * (max((len(r) for r in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""  # CommonMark strips one each side
    return f"{fence}{pad}{flat}{pad}{fence}".replace("|", "\\|")


def _md_risk(s: Step) -> str:
    return "**destructive**" if s.risk == "destructive" else s.risk


def _md_details(s: Step) -> str:
    parts = [md_text(s.reason)] if s.reason else []
    parts += [
        f"{'**' if e.destructive else ''}{md_code(e.code)}{'**' if e.destructive else ''}: {md_text(e.why)}"
        for e in s.effects
    ]
    parts += [md_code(_change_line(c).strip()) for c in s.changes]
    return "<br>".join(parts)
