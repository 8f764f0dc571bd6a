"""Plugin versions as Kafka Connect 4.1+ resolves them (KIP-891), pure.

One worker may hold several versions of a plugin, each in its own folder under `plugin.path`
(`GET /connector-plugins?connectorsOnly=false` lists one entry per class and version). A
connector pins its plugin with `connector.plugin.version`, its converters with
`key.converter.plugin.version`, `value.converter.plugin.version` and
`header.converter.plugin.version`. How Connect reads a pin (`PluginVersionUtils`
.connectorVersionRequirement, Kafka 4.1): none or `latest` is the newest installed; a plain
version is a hard requirement, exactly that version; a Maven range (`[3.5,3.6)`, `[3.6,)`,
`(,4.0)`, unions joined by commas) is the newest installed inside it. Versions compare as
Maven's do, close enough for release numbers (`3.6.1.Final` > `3.5.2.Final`, `10.8.4` > `9.0`).

Skew is a cluster whose workers do not hold the same versions of a class: a task runs
whichever its worker holds, so one connector can run two versions at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hephaestus.classes import PIN_KEYS
from hephaestus.keyrenames import PIN, misnamed
from hephaestus.versions import requirement, version_key

# worker -> class -> the versions it holds
Inventory = Mapping[str, Mapping[str, frozenset[str]]]


@dataclass(frozen=True)
class Skew:
    """A class whose workers hold different versions: {worker: versions}."""

    plugin: str
    held: Mapping[str, frozenset[str]]

    def describe(self) -> str:
        by = "; ".join(f"{w}: {', '.join(sorted(v, key=version_key)) or 'none'}" for w, v in sorted(self.held.items()))
        return f"{self.plugin} differs between workers ({by})"


def skew(inventory: Inventory) -> tuple[Skew, ...]:
    """Every class not held in the same versions by every worker of the cluster."""
    classes = sorted({c for held in inventory.values() for c in held})
    found = []
    for c in classes:
        held = {w: inventory[w].get(c, frozenset()) for w in sorted(inventory)}
        if len(set(held.values())) > 1:
            found.append(Skew(c, held))
    return tuple(found)


def pins(config: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """{pin key: (the class it pins, its spec)} of the pins a config sets ("" class: the
    worker's default converter, unknown here)."""
    return {k: (config.get(c, "").strip(), config[k].strip()) for k, c in PIN_KEYS.items() if config.get(k, "").strip()}


def lacking(inventory: Inventory, plugin: str, spec: str) -> tuple[str, ...]:
    """The workers on which no installed version of `plugin` fits `spec`."""
    need = requirement(spec)
    return tuple(w for w in sorted(inventory) if need.chosen(inventory[w].get(plugin, frozenset())) is None)


@dataclass(frozen=True)
class Workers:
    """What each worker of one cluster holds (`fleet.pluginread` reads it): {worker: {class:
    versions}}, the classes' types, and the workers that could not be checked."""

    cluster: str
    held: Inventory = field(default_factory=dict)
    types: Mapping[str, str] = field(default_factory=dict)  # class -> source/sink/converter/…
    unread: Mapping[str, str] = field(default_factory=dict)  # worker -> why it was not read
    unversioned: tuple[str, ...] = ()  # workers whose plugins carry no version (before KIP-891)

    def unchecked(self) -> str:
        """Why a pin cannot be checked on every worker ("" when it can)."""
        if self.unread:
            worker, why = sorted(self.unread.items())[0]
            return f"worker {worker} not read ({why})"
        if self.unversioned:
            return f"worker {self.unversioned[0]} lists no plugin versions (Connect before 4.1)"
        return ""


def findings(
    cluster: str, w: Workers, configs: Mapping[str, Mapping[str, str]], running: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """What is wrong with a cluster's plugins, each naming the cluster and worker: a worker not
    read or before KIP-891, skew between workers, a connector's pin that is no version or that a
    worker holds nothing for (its tasks placed there cannot start), and a key the version a
    connector runs ({name: version}) reads under another name (an unpinned connector whose
    workers got a release that renamed it: Connect ignores the old key without a word)."""
    found = [f"{cluster}: worker {n} not read: {why}" for n, why in sorted(w.unread.items())]
    found += [
        f"{cluster}: worker {n} lists no plugin versions (Connect before 4.1): versions cannot be checked"
        for n in w.unversioned
    ]
    found += [f"{cluster}: {s.describe()}" for s in skew(w.held)]
    found += [f"{cluster}: {name}: {why}" for name, c in sorted(configs.items()) for why in unheld(c, w)]
    return tuple(found + [f"{cluster}: {name}: {why}" for name, why in _misread(configs, running or {})])


def _misread(configs: Mapping[str, Mapping[str, str]], running: Mapping[str, str]) -> list[tuple[str, str]]:
    return [
        (name, f"runs {v}, which does not read {m.key!r}: {m.why}")
        for name, v in sorted(running.items())
        if v and name in configs
        for m in misnamed({**configs[name], PIN: v})
    ]


def unheld(config: Mapping[str, str], w: Workers) -> list[str]:
    """Why each of a config's pins cannot run on every worker: no version nor range, or a worker
    holding nothing that fits (its tasks there cannot start). A converter pin whose class is the
    worker's default, unknown here, is not judged. `status`, `plugins` and a plan's gate say it
    in these words."""
    found = []
    for key, (cls, spec) in sorted(pins(config).items()):
        try:
            missing = lacking(w.held, cls, spec) if cls else ()
        except ValueError as exc:
            found.append(f"{key}: {exc}")
            continue
        if missing:
            found.append(f"{key}={spec}: worker {', '.join(missing)} holds no {cls} that fits")
    return found
