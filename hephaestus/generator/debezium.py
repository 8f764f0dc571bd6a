"""What differs between Debezium generations, in one place.

Connect silently ignores keys a plugin no longer knows, so emitting a removed key for 3.x
is a silent bug (deletes that were meant to be dropped start flowing). Reject it instead.
"""

from __future__ import annotations

from hephaestus.generator.model import Definition

SNAPSHOT_MODES = {
    2: {"always", "initial", "initial_only", "never", "no_data", "when_needed", "custom", "recovery"},
    3: {"always", "initial", "initial_only", "no_data", "when_needed", "configuration_based", "custom", "recovery"},
}

# Keys Debezium 3.x removed (ExtractNewRecordState since 3.2): what to use instead.
REMOVED_IN_3 = {
    "drop.tombstones": "delete.tombstone.handling.mode",
    "delete.handling.mode": "delete.tombstone.handling.mode",
}


def check_definition(d: Definition) -> list[tuple[str, str]]:
    """Problems as (field path, message); empty when the definition fits its Debezium target."""
    problems = _snapshot_mode(d) + _converter(d) + _pipelines(d)
    if d.debezium_version[0] >= 3:
        problems += _removed_keys(d)
    return problems


def _snapshot_mode(d: Definition) -> list[tuple[str, str]]:
    modes = SNAPSHOT_MODES[d.debezium_version[0]]
    mode = dict(d.source.options).get("snapshot.mode", d.source.snapshot_mode)
    if mode in modes:
        return []
    hint = "; use no_data" if mode == "never" else ""
    target = ".".join(map(str, d.debezium_version))
    return [
        (
            "source.snapshot_mode",
            f"snapshot mode {mode!r} does not exist in Debezium {target}{hint} (valid: {', '.join(sorted(modes))})",
        )
    ]


def _converter(d: Definition) -> list[tuple[str, str]]:
    c = d.converter
    if c.format != "avro" or c.schema_registry_url:
        return []
    if c.from_project:  # the project file names one, but not one this converter can talk to
        return [
            (
                "converter.schema_registry_url",
                f"the project file's {c.from_project} is not Apicurio's Confluent-compatible API "
                "(…/apis/ccompat/v7), from which its converter's URL (…/apis/registry/v2) is made: "
                "name the converter's URL here",
            )
        ]
    return [
        (
            "converter.schema_registry_url",
            f"avro needs a schema registry: its URL here, or the project file's "
            f"clusters.{d.cluster}.schema_registry_url",
        )
    ]


def _pipelines(d: Definition) -> list[tuple[str, str]]:
    signal = d.source.signal_table
    return [
        (f"{p.path}.source_table", f"{signal} is the signal table: its rows are signals, never replicated to a sink")
        for p in d.pipelines
        if p.source_table == signal
    ]


def _removed_keys(d: Definition) -> list[tuple[str, str]]:
    problems = []
    for p in d.pipelines:
        for s in p.sinks:
            for key, _ in s.options:
                removed = [r for r in REMOVED_IN_3 if key.endswith("." + r)]
                if key.startswith("transforms.") and removed:
                    problems.append(
                        (
                            f"{s.path}.options.{key}",
                            f"removed in Debezium 3.x and silently ignored by Connect; use {REMOVED_IN_3[removed[0]]}",
                        )
                    )
    return problems


def unwrap_keys(version: tuple[int, int], delete: bool) -> dict[str, str]:
    """ExtractNewRecordState keys that drop or keep deletes, for the targeted generation."""
    if version[0] >= 3:
        return {"transforms.unwrap.delete.tombstone.handling.mode": "tombstone" if delete else "drop"}
    return {
        "transforms.unwrap.drop.tombstones": "false" if delete else "true",
        "transforms.unwrap.delete.handling.mode": "none" if delete else "drop",
    }
