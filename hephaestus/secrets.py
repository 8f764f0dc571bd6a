"""Masking: one redactor for every output channel. Placeholders are not secrets.

Two ways a secret is recognised:

- **by key**: a config key named like a secret (`*password*`, `*token*`, `*.jaas.config`,
  `basic.auth.user.info` …) or typed PASSWORD by the live plugin (`learn_secret_keys`);
- **by value**: every value the run has seen that is a secret — values of secret keys, the
  password in a URL's userinfo, `password=`/`pwd=`/`secret=`/`token=` parameters, the webhook,
  the basic-auth and DSN passwords, the values of a readable secrets file (`learn`) — plus the
  patterns themselves, so a credential never seen before is still masked where it has a
  recognisable shape.

`REDACTOR` is the process-wide one: the CLI's output streams, the log handler, Slack, the
audit log and metrics labels all pass their text through it.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

MASK = "****"
# Shorter values are masked where their key says they are secret, but never searched for in
# free text: replacing every "pw" or "123" in a message would make it unreadable.
MIN_FREE_TEXT = 4

_SENSITIVE = re.compile(
    r"password|passwd|pwd|secret|token|credential|jaas|private|api[._-]?key|access[._-]?key"
    r"|user\.info|auth\.info|keystore\.key|sasl\.",
    re.IGNORECASE,
)
_PLACEHOLDER = re.compile(r"^\$\{[a-zA-Z0-9_.-]+:[^}]*\}$")
_FILE_PLACEHOLDER = re.compile(r"\$\{file:(?P<path>/[^:}]+):[^}]*\}")
_WORDS = r"password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|client[_-]?secret"
# Credentials inside any text, whatever the key: `scheme://user:pw@host`, `?password=pw&`,
# `password="pw"` (JAAS), `password: pw` / `password=pw` (DSNs, properties, traces).
_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?P<pre>[a-z][a-z0-9+.-]*://[^/@\s:]*:)(?P<secret>[^/@\s]+)(?=@)", re.IGNORECASE),
    re.compile(rf"(?P<pre>(?:[?&;]|\b)(?:{_WORDS})\s*=\s*\"?)(?P<secret>[^\"&;\s,)]+)", re.IGNORECASE),
    # Not after a dot: "for configuration connection.password: too weak" names a key in prose.
    re.compile(rf"(?P<pre>(?<![\w.])(?:{_WORDS})\"?\s*:\s*\"?)(?P<secret>[^\"\s,;&)}}]+)", re.IGNORECASE),
)
# Credentials by their shape alone, whatever key or text holds them (issue 29: `import` wrote
# these to git): an Oracle thin URL's `user/pw@`, an Authorization header's Bearer or Basic
# token, a PEM private key, an AWS access key id, GitHub and Slack tokens, a JWT.
_TOKENS = (
    re.compile(r"(?P<pre>jdbc:oracle:[a-z0-9]+:[^/@\s:]*/)(?P<secret>[^@\s]+)(?=@)", re.IGNORECASE),
    re.compile(r"(?P<pre>\b(?:Bearer|Basic)\s+)(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)"),
    re.compile(
        r"(?P<pre>)(?P<secret>-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$))"
    ),
    re.compile(r"(?P<pre>)(?P<secret>\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)"),
    re.compile(r"(?P<pre>)(?P<secret>\bgh[pousr]_[A-Za-z0-9]{30,})"),
    re.compile(r"(?P<pre>)(?P<secret>\bxox[abprs]-[A-Za-z0-9-]{10,})"),
    re.compile(r"(?P<pre>)(?P<secret>\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+)"),
)
_PATTERNS = (*_PATTERNS, *_TOKENS)
# Each pattern's cheap pre-check: a substring it cannot match without (tried before the scan).
_NEEDS: tuple[tuple[str, ...], ...] = (
    ("@",),
    ("=",),
    (":",),
    ("@",),
    ("Bearer", "Basic"),
    ("PRIVATE KEY",),
    ("AKIA", "ASIA"),
    ("gh",),
    ("xox",),
    ("eyJ",),
)
# All of them at once: most values of a fleet (topics, class names, numbers) hold none, and one
# search in C spares them ten (issue 47: learning 5,000 live configs cost ~100 ms in the loop).
_ANY_NEED = re.compile("|".join(re.escape(n) for needs in _NEEDS for n in needs))


@lru_cache(maxsize=4096)
def _secret_name(key: str) -> bool:
    """A fleet has a few dozen distinct keys and thousands of configs: each name is judged once."""
    return bool(_SENSITIVE.search(key))


def is_placeholder(value: str) -> bool:
    """`${file:/path:key}` and friends: resolved by Connect, not a secret themselves."""
    return bool(_PLACEHOLDER.match(value))


class Redactor:
    """Knows every secret value and secret key name this run has seen; masks them in text."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._keys: set[str] = set()
        self._files: set[str] = set()
        self._pairs: set[tuple[str, str]] = set()  # (key, value) already learnt from a config
        self._ordered: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def is_secret_key(self, key: str) -> bool:
        return _secret_name(key) or key in self._keys

    @property
    def key_count(self) -> int:
        """Grows when a plugin teaches new secret keys: configs learnt before need learning again."""
        return len(self._keys)

    def learn_secret_keys(self, keys: Iterable[str]) -> None:
        with self._lock:
            new = set(keys) - self._keys
            if new:
                self._keys.update(new)
                self._pairs.clear()  # a pair seen before may now be a secret key's value

    def learn(self, *values: str | None) -> None:
        """Secret values (and the credentials embedded in them), to mask wherever they appear."""
        found = {s for v in values if v and not is_placeholder(v) for s in (v, *_embedded(v))}
        found = {s for s in found if len(s) >= MIN_FREE_TEXT}
        with self._lock:
            if found - self._values:
                self._values |= found
                self._ordered = tuple(sorted(self._values, key=len, reverse=True))

    def learn_embedded(self, text: str) -> None:
        """Only the credentials inside `text` (a DSN, a URL): the rest of it is no secret."""
        self.learn(*_embedded(text))

    def learn_config(self, config: Mapping[str, str]) -> None:
        """The values of a config's secret keys, credentials embedded in any value, and the
        values of every absolute `${file:/path:key}` secrets file that can be read here."""
        for key, value in config.items():
            if not isinstance(value, str) or (key, value) in self._pairs:
                continue  # a fleet repeats most pairs (URLs, placeholders): each is learnt once
            self._pairs.add((key, value))
            if self.is_secret_key(key):
                self.learn(value)
            else:
                self.learn_embedded(value)
            for match in _FILE_PLACEHOLDER.finditer(value):
                self.learn_file(Path(match.group("path")))

    def learn_file(self, path: Path) -> None:
        """A Java properties file (Connect's FileConfigProvider format), once: the values of
        its secret keys (`auth_password=…`) and credentials inside the others (a JDBC URL's).
        Host names, ports and user names stay readable."""
        with self._lock:
            if str(path) in self._files:
                return
            self._files.add(str(path))
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return  # not readable here (it lives on the Connect workers): patterns still apply
        self.learn_config(properties(text))

    def __call__(self, text: str) -> str:
        for value in self._ordered:
            if value in text:
                text = text.replace(value, MASK)
        if not _ANY_NEED.search(text):
            return text
        for pattern, needs in zip(_PATTERNS, _NEEDS, strict=True):
            if any(n in text for n in needs):  # a substring test is ~100x cheaper than a scan
                text = pattern.sub(_masked, text)
        return text


def _masked(m: re.Match[str]) -> str:
    return m.group(0) if _kept(m.group("secret")) else m.group("pre") + MASK


def _kept(found: str) -> bool:
    """Masked already, or a placeholder (`${file:…}`, quoted or not): text the tool writes itself
    in help and hints names placeholders, and a mask there would garble it."""
    return found == MASK or found.lstrip("'\"").startswith("${")


def _embedded(value: str) -> list[str]:
    if not _ANY_NEED.search(value):
        return []
    return [
        m.group("secret")
        for p, needs in zip(_PATTERNS, _NEEDS, strict=True)
        if any(n in value for n in needs)
        for m in p.finditer(value)
        if not _kept(m.group("secret"))
    ]


def credentials_in(value: str) -> list[str]:
    """The credentials a value holds by their shape (a URL's password, a token, a key), placeholders
    aside: what must never reach git or an output in clear."""
    return [] if is_placeholder(value) else _embedded(value)


# The one secret detector (validate, import, the pre-commit hook): a key whose value IS a
# credential. Narrower than what masking takes: `sasl.mechanism` or
# `basic.auth.credentials.source` are named like secrets and hold none; refusing them in git
# would be a false alarm, masking them in output costs nothing.
_CREDENTIAL_KEY = re.compile(
    r"password|passwd|pwd|secret|token|jaas\.config|api[._-]?key|access[._-]?key|user\.info|auth\.info"
    r"|keystore\.key|private[._-]?key",
    re.IGNORECASE,
)
_DESCRIBES = re.compile(
    r"[._-](source|mechanism|type|class|location|file|path|provider|enabled|url|uri|endpoint|ms|name|algorithm)$",
    re.IGNORECASE,
)


def plaintext(key: str, value: str, typed: frozenset[str] = frozenset()) -> str:
    """Why this config value is a plaintext credential that git must not hold ("" when it is
    none): its key names a credential (or the plugin types it PASSWORD: `typed`), or the value
    has a credential's shape (a URL's password, a token, a private key). Placeholders are fine."""
    if not value or is_placeholder(value):
        return ""
    if key in typed:
        return f"{key} is typed PASSWORD by its plugin"
    if _CREDENTIAL_KEY.search(key) and not _DESCRIBES.search(key):
        return f"{key} names a credential"
    return "the value holds a credential" if credentials_in(value) else ""


def properties(text: str) -> dict[str, str]:
    """A Java properties file's `key=value` / `key: value` pairs (Connect's FileConfigProvider format)."""
    return dict(p for p in map(_property, text.splitlines()) if p)


def _property(line: str) -> tuple[str, str] | None:
    stripped = line.strip()
    if not stripped or stripped[0] in "#!":
        return None
    parts = re.split(r"\s*[=:]\s*", stripped, maxsplit=1)
    return (parts[0], parts[1]) if len(parts) == 2 else None


REDACTOR = Redactor()


def is_sensitive(key: str) -> bool:
    return REDACTOR.is_secret_key(key)


def digest(value: str) -> str:
    """A short fingerprint of a secret, so a change shows without the value (16 bits: too few
    to test guesses against, enough to tell two values apart at a glance)."""
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:4] + "..."


def mask_value(key: str, value: str | None) -> str | None:
    """A secret key's literal value is masked, a `${file:…}` placeholder shown as is, and
    any other value shown with the credentials embedded in it masked."""
    if value is None or is_placeholder(value):
        return value
    return MASK if is_sensitive(key) else REDACTOR(value)


def mask_config(config: Mapping[str, str]) -> dict[str, str]:
    return {k: mask_value(k, v) or "" for k, v in config.items()}
