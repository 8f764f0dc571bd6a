"""Git's desired state for one cluster: its connector folder, validated (edge: reads files)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hephaestus.classes import PIN_KEYS
from hephaestus.errors import InputError, InputErrors
from hephaestus.fleet.model import Desired
from hephaestus.keyrenames import misnamed
from hephaestus.project import Cluster
from hephaestus.safety.gate import Allow, allow_of
from hephaestus.secrets import plaintext
from hephaestus.versions import requirement
from hephaestus.yamlsrc import CLIP, clip, format_path, load_json, named

GENERATED = ("source", "sink")
CUSTOM = "custom"
UNMANAGED = "unmanaged"  # a file's explicit opt-out: this connector's state is kept elsewhere
STATES = ("running", "paused", "stopped", UNMANAGED)
_HELM = re.compile(r"\{\{\s*\.Values\.global\.(\w+)\s*\}\}")


def load_desired(cluster: Cluster, include_custom: bool) -> dict[str, Desired]:
    """Connectors this cluster should run; all files validated, all errors reported together."""
    return _load(cluster, (*GENERATED, CUSTOM) if include_custom else GENERATED)


def held_back(cluster: Cluster, include_custom: bool) -> frozenset[str]:
    """Custom connectors left out of this run (no --deploy-custom-sinks): never deleted for it."""
    return frozenset() if include_custom else frozenset(_load(cluster, (CUSTOM,)))


def files_of(cluster: Cluster, kinds: tuple[str, ...] = (*GENERATED, CUSTOM)) -> list[Path]:
    """Every connector file of the cluster's folder: all are checked, `select` or not."""
    if not cluster.connectors.is_dir():
        raise InputError(str(cluster.connectors), f"connector folder of cluster {cluster.name!r} not found")
    return sorted(p for k in kinds for p in (cluster.connectors / k).glob("*.json"))


def _plaintext_in(d: Desired) -> list[InputError]:
    """Plaintext credentials in one connector file (the one detector, secrets.plaintext, that
    import uses too). Checked wherever git's files are loaded, so validate, its pre-commit hook,
    reconcile and every other command refuse the same file with the same words."""
    return [
        InputError(d.origin, f"{_PLAINTEXT} ({why}); {_INSTEAD}", field=format_path(["config", key]))
        for key, value in sorted(d.config.items())
        if (why := plaintext(key, value))
    ]


def _pins_in(d: Desired) -> list[InputError]:
    """A plugin pin Connect would refuse (issue 50: a hand-edited `connector.plugin.version`),
    named where it is written, before anything is planned or applied."""
    found = []
    for key in sorted(k for k in PIN_KEYS if d.config.get(k, "").strip()):
        try:
            requirement(d.config[key])
        except ValueError as exc:
            found.append(InputError(d.origin, str(exc), field=format_path(["config", key])))
    return found


def _renamed_in(d: Desired) -> list[InputError]:
    """A key its pinned version does not read under that name (issue 50: a pin bumped by hand
    across a release that renamed it; Connect would take the file and ignore the key)."""
    return [
        InputError(
            d.origin,
            f"the pinned version does not read {m.key!r}: {m.why}; rename it (generate rewrites generated files)",
            field=format_path(["config", m.key]),
        )
        for m in misnamed(d.config)
    ]


_PLAINTEXT = "holds a plaintext secret"
_INSTEAD = "git gets a placeholder, never the value: ${file:/path/to/secrets.properties:some_key}"


def _load(cluster: Cluster, kinds: tuple[str, ...]) -> dict[str, Desired]:
    files = files_of(cluster, kinds)
    desired: dict[str, Desired] = {}
    errors: list[InputError] = []
    for path in files:
        try:
            d = _parse(path, cluster.helm_values)
        except InputError as exc:
            errors.append(exc)
            continue
        errors += _plaintext_in(d) + _pins_in(d) + _renamed_in(d)  # `select`ed or not: git holds it either way
        if cluster.selects(d.name):
            errors += _add(desired, d)
    if errors:
        raise InputErrors(errors)
    return desired


def _add(desired: dict[str, Desired], d: Desired) -> list[InputError]:
    first = desired.setdefault(d.name, d)
    if first is d:
        return []
    return [InputError(d.origin, f"connector {d.name!r} is also defined in {first.origin}", field="name")]


def _parse(path: Path, helm_values: dict[str, str]) -> Desired:
    """One connector file, checked before anything is written (a bad one stops the whole run)."""
    doc = load_json(path)  # not UTF-8, a directory named *.json, too deep, duplicate keys: InputError
    if not isinstance(doc, dict) or not isinstance(doc.get("name"), str) or not doc["name"]:
        raise InputError(str(path), "expected an object with a non-empty string 'name'", field="name")
    config = doc.get("config")
    if not isinstance(config, dict) or "connector.class" not in config:
        raise InputError(str(path), "expected an object with 'connector.class'", field="config")
    for key, value in config.items():
        if not isinstance(value, str):
            raise InputError(
                str(path),
                f"must be a string, got {json.dumps(value)[:CLIP]} "
                "(Connect stores strings: a non-string is a permanent false diff)",
                field=format_path(["config", key]),
            )
    name = _render(doc["name"], helm_values, path, ["name"])
    rendered = {k: _render(v, helm_values, path, ["config", k]) for k, v in config.items()}
    _check_name(path, doc["name"], name, rendered.get("name"))
    allow = _allow(path, doc.get("allow_destructive", False))
    return Desired(name, rendered, str(path), _renamed_from(path, doc, name), allow, _state(path, doc))


def _state(path: Path, doc: dict[str, Any]) -> str:
    """Git's word on the state: absent means running (Strimzi's default), so that reverting a
    pause resumes. `unmanaged` opts out ("" inside): its state is kept by someone else."""
    state = doc.get("state", "running")
    if state not in STATES:
        raise InputError(
            str(path), f"must be running, paused, stopped or unmanaged, got {clip(json.dumps(state))}", field="state"
        )
    return "" if state == UNMANAGED else str(state).upper()


def _allow(path: Path, given: Any) -> Allow:
    """`true` (every destructive effect of this connector's changes) or a list of effect codes."""
    if isinstance(given, list) and all(isinstance(c, str) for c in given):
        return allow_of(given, str(path), "allow_destructive")
    if not isinstance(given, bool):
        raise InputError(
            str(path),
            f"must be true, false or a list of effects, got {clip(json.dumps(given))}",
            field="allow_destructive",
        )
    return allow_of(given)


def _renamed_from(path: Path, doc: dict[str, Any], name: str) -> str:
    """The live connector this one replaces, offsets kept (optional; see reconciler.renames)."""
    old = doc.get("renamed_from", "")
    if not isinstance(old, str) or old == name or (old and not _safe_segment(old)):
        raise InputError(
            str(path),
            f"renamed_from must be another connector's name, got {clip(json.dumps(old))}",
            field="renamed_from",
        )
    return old


def _check_name(path: Path, written: str, name: str, config_name: str | None) -> None:
    """The name is a URL path segment and the file's identity: refuse what would misroute."""
    check_name(path, name)
    if config_name is not None and config_name != name:
        # Connect refuses the create only at apply time, after other writes of the run.
        raise InputError(
            str(path), f"config.name {named(config_name)} differs from name {named(name)}", field="config.name"
        )
    if not _HELM.search(written) and path.stem != name:
        # Helm-templated names carry braces and spaces: their files leave the prefix out.
        raise InputError(
            str(path),
            f"file name {named(path.name)} does not match name {named(name)}: call it {named(name + '.json')}",
            field="name",
        )


def check_name(path: Path, name: str) -> None:
    """A connector name must be one safe path segment: in the URL and as a file name."""
    if not _safe_segment(name):
        raise InputError(
            str(path),
            f"connector name {named(name)} is not a safe path segment (no '/', '\\', control characters, '.' or '..')",
            field="name",
        )


def _safe_segment(name: str) -> bool:
    return bool(name) and name not in (".", "..") and not _UNSAFE.search(name)


# Separators and control characters (C0, DEL, C1): a name goes into /connectors/{name}.
_UNSAFE = re.compile(r"[/\\\x00-\x1f\x7f-\x9f]")


def _render(text: str, values: dict[str, str], path: Path, field: list[str]) -> str:
    """Fill Helm-templated names (`{{ .Values.global.environment }}`) from the cluster's values."""
    if "{{" not in text:
        return text  # nearly every value: no regex, no substitution

    def sub(match: re.Match[str]) -> str:
        if match.group(1) not in values:
            raise InputError(
                str(path),
                f"Helm value {match.group(1)!r} has no value: set helm_values.{match.group(1)} for this cluster",
                field=format_path(field),
            )
        return values[match.group(1)]

    return _HELM.sub(sub, text)
