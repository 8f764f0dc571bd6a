"""A connector as git wants it and as Connect runs it (values; pure): what fleet.desired loads,
what the listing reads, and what a plan takes."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from hephaestus.safety.gate import Allow
from hephaestus.secrets import mask_config


@dataclass(frozen=True)
class Desired:
    name: str
    config: Mapping[str, str] = field(hash=False)
    origin: str = ""
    renamed_from: str = ""  # the live connector this one takes over (offsets and all)
    allow: Allow = Allow()  # the file's `allow_destructive` (true, or effect codes): what of it may go
    state: str = ""  # the file's `state` (RUNNING, PAUSED, STOPPED): converged; "" = `unmanaged`


@dataclass(frozen=True)
class Live:
    name: str
    config: Mapping[str, str] = field(hash=False)
    type: str = ""  # "source" / "sink" as Connect reports it
    state: str = ""  # RUNNING / PAUSED / STOPPED / FAILED … as Connect reports it
    version: str = field(default="", compare=False)  # its plugin's version as it runs (Connect 4.1+)


# Keys no diff looks at unless the project says otherwise (`policy.ignore_keys` adds to these;
# the reference's `ignorableField` list, in spirit): what a server or platform adds to a stored
# config and git never holds, so a difference in them would restart the connector every run.
# `name` is not here: Connect adds it to every config it returns, and it is always left out.
DEFAULT_IGNORE_KEYS: tuple[str, ...] = (
    "__internal.*",  # keys some Connect platforms and operators write beside the user's
)


def comparable(config: Mapping[str, str], ignore: frozenset[str]) -> dict[str, str]:
    """The config as it should be compared: `name` and ignored keys (exact, or a glob with `*`) out."""
    skip = _ignored(ignore)
    return {k: v for k, v in config.items() if k != "name" and not skip(k)}


def config_hash(config: Mapping[str, str] | None) -> str | None:
    """A stable fingerprint of a config, computed over masked values (never a secret)."""
    if config is None:
        return None
    canonical = json.dumps(mask_config(comparable(config, frozenset())), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@lru_cache(maxsize=16)
def _ignored(ignore: frozenset[str]) -> Callable[[str], bool]:
    """One predicate per ignore list (a fleet compares thousands of configs against it)."""
    exact = frozenset(k for k in ignore if "*" not in k)
    globs = [k for k in ignore if "*" in k]
    if not globs:
        return exact.__contains__
    pattern = re.compile("|".join(fnmatch.translate(g) for g in sorted(globs)))
    return lambda key: key in exact or pattern.match(key) is not None
