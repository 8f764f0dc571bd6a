"""The redactor: which keys and values count as secrets, and that masking leaves nothing of
them in a message (hephaestus.secrets, hephaestus.connect.redact; mutation-tested core)."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

import pytest

from hephaestus.connect.redact import redact, sensitive_values
from hephaestus.secrets import (
    MASK,
    MIN_FREE_TEXT,
    Redactor,
    digest,
    is_placeholder,
    is_sensitive,
    mask_config,
    mask_value,
)


@pytest.mark.parametrize(
    "key",
    [
        "connection.password",
        "PASSWORD",
        "db.passwd",
        "client.secret",
        "oauth.token",
        "aws.credentials",
        "sasl.jaas.config",
        "ssl.private.key",
        "api.key",
        "api_key",
        "API-KEY",
        "apikey",
        "access.key",
        "access_key",
        "s3.accesskey",
    ],
)
def test_sensitive_keys(key: str) -> None:
    assert is_sensitive(key)


@pytest.mark.parametrize("key", ["connection.user", "topics", "key.converter", "api", "access", "tasks.max"])
def test_ordinary_keys(key: str) -> None:
    assert not is_sensitive(key)


@pytest.mark.parametrize(
    ("value", "placeholder"),
    [
        ("${file:/opt/secrets.properties:password}", True),
        ("${env:DB_PASSWORD}", True),
        ("${vault-1.x_y:secret/data/x:pw}", True),
        ("${file:}", True),
        ("x${file:/a:b}", False),
        ("${file:/a:b}x", False),
        ("${nocolon}", False),
        ("${a b:c}", False),
        ("${:c}", False),
        ("$file:/a:b", False),
        ("hunter2", False),
    ],
)
def test_placeholders(value: str, placeholder: bool) -> None:
    assert is_placeholder(value) is placeholder


def test_mask_value() -> None:
    assert MASK == "****"
    assert mask_value("connection.password", "hunter2") == "****"
    assert mask_value("connection.password", "") == "****"
    assert mask_value("connection.password", None) is None
    assert mask_value("connection.password", "${file:/s:pw}") == "${file:/s:pw}"
    assert mask_value("connection.user", "bob") == "bob"


def test_mask_config_masks_secrets_and_keeps_the_rest() -> None:
    config = {
        "connection.user": "bob",
        "connection.password": "hunter2",
        "topics": "",
        "sasl.jaas.config": "${file:/j:cfg}",
    }
    assert mask_config(config) == {
        "connection.user": "bob",
        "connection.password": "****",
        "topics": "",
        "sasl.jaas.config": "${file:/j:cfg}",
    }


def test_sensitive_values_longest_first_without_duplicates() -> None:
    config = {"a.password": "pw", "b.password": "longer-pw", "c.token": "pw", "user": "bob"}
    assert sensitive_values(config) == ("longer-pw", "pw")


def test_credentials_embedded_in_any_value_are_sensitive() -> None:
    config: dict[str, Any] = {
        "connection.url": "jdbc:postgresql://db/x?user=a&PASSWORD=p",
        "store.url": "https://user:pw@host/path",
        "plain.url": "https://host:8443/path",
        "name": "password=literally",
        "connector.class": "x.PasswordSink",
        "connection.password": "${file:/s:pw}",
        "empty.password": "",
        "count.token": 5,
    }
    assert sensitive_values(config) == ("jdbc:postgresql://db/x?user=a&PASSWORD=p", "https://user:pw@host/path")


def test_name_and_class_are_never_secrets_whatever_their_key_says() -> None:
    assert sensitive_values({"name": "my-secret-sink", "connector.class": "SecretSink"}) == ()
    assert sensitive_values({"secret.name": "s3cr3t"}) == ("s3cr3t",)


def test_redact_replaces_every_occurrence_longest_first() -> None:
    text = "Invalid value hunter2x for password (hunter2x, hunter2)"
    values = sensitive_values({"a.password": "hunter2", "b.password": "hunter2x"})
    assert redact(text, values) == "Invalid value **** for password (****, ****)"
    assert redact("nothing here", ()) == "nothing here"


# --- the process-wide redactor's rules, on a fresh instance -------------------------------------


def test_a_learnt_secret_is_masked_wherever_it_appears_longest_first() -> None:
    r = Redactor()
    r.learn("hunter2", "hunter22", None, "", "pw", "${file:/s:pw}")
    assert (
        r("login hunter22 then hunter2, pw stays, ${file:/s:pw} stays")
        == "login **** then ****, pw stays, ${file:/s:pw} stays"
    )
    assert r("nothing") == "nothing"


def test_values_shorter_than_the_free_text_minimum_are_not_searched_for() -> None:
    r = Redactor()
    assert MIN_FREE_TEXT == 4
    r.learn("abc", "abcd")
    assert r("abc abcd") == "abc ****"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("jdbc:postgresql://bob:s3cr3t@db:5432/x", "jdbc:postgresql://bob:****@db:5432/x"),
        ("postgresql://db/x?user=bob&password=s3cr3t&ssl=1", "postgresql://db/x?user=bob&password=****&ssl=1"),
        ('org.Login required username="bob" password="s3cr3t";', 'org.Login required username="bob" password="****";'),
        ("dsn host=db PWD = s3cr3t port=5432", "dsn host=db PWD = **** port=5432"),
        ("token: abc123xyz, next", "token: ****, next"),
        (
            "Invalid value x for configuration connection.password: too weak",
            "Invalid value x for configuration connection.password: too weak",
        ),
        ("https://host:8443/path", "https://host:8443/path"),
    ],
)
def test_credentials_with_a_recognisable_shape_are_masked_unseen(text: str, masked: str) -> None:
    assert Redactor()(text) == masked


def test_embedded_credentials_are_learnt_without_the_rest_of_the_text() -> None:
    r = Redactor()
    r.learn_embedded("jdbc:postgresql://bob:longsecret@db:5432/x")
    assert r("echo: longsecret at db:5432") == "echo: **** at db:5432"


def test_learn_config_learns_secret_keys_and_embedded_credentials(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(
        "# comment\n! also\n\nauth_password = filesecret\nurl: jdbc:x://u:urlsecret@h/db\nhost=db.internal\nlonely\n"
    )
    r = Redactor()
    r.learn_secret_keys(["custom.opaque"])
    r.learn_config(
        {
            "custom.opaque": "opaquevalue",
            "connection.url": "jdbc:x://bob:inurl99@h/db",
            "topics": "plain-topic",
            "count": 3,  # type: ignore[dict-item]
            "connection.password": f"${{file:{secrets}:auth_password}}",
        }
    )
    assert r.is_secret_key("custom.opaque") and not r.is_secret_key("topics")
    text = "opaquevalue inurl99 filesecret urlsecret plain-topic db.internal bob"
    assert r(text) == "**** **** **** **** plain-topic db.internal bob"


def test_a_secrets_file_is_read_once_and_an_unreadable_one_is_skipped(tmp_path: Path) -> None:
    secrets = tmp_path / "s.properties"
    secrets.write_text("db_password=firstvalue\n")
    r = Redactor()
    r.learn_file(secrets)
    secrets.write_text("db_password=secondvalue\n")
    r.learn_file(secrets)
    r.learn_file(tmp_path / "missing.properties")
    assert r("firstvalue secondvalue") == "**** secondvalue"


def test_mask_value_masks_embedded_credentials_of_ordinary_keys() -> None:
    assert mask_value("connection.url", "jdbc:x://bob:pw123456@h/db") == "jdbc:x://bob:****@h/db"


def test_digest_tells_values_apart_without_showing_them() -> None:
    assert digest("hunter2") == "sha256:" + hashlib.sha256(b"hunter2").hexdigest()[:4] + "..."
    assert digest("hunter2") != digest("hunter3")


def test_a_longer_secret_is_masked_before_a_shorter_one_inside_it() -> None:
    r = Redactor()
    r.learn("zzzz", "azzzzb")  # reverse alphabetical order would mask "zzzz" first
    assert r("azzzzb") == "****"


def test_already_masked_text_is_left_as_it_is() -> None:
    text = "url?password=**** and x://u:****@h token: ****"
    assert Redactor()(text) == text


def test_a_secrets_file_with_comments_odd_lines_and_bad_bytes(tmp_path: Path) -> None:
    secrets = tmp_path / "s.properties"
    secrets.write_bytes(
        b"#db_password=commented\n!api_key=alsocommented\nx\n"
        b"note=caf\xff\xfe\nXpassword=xvalue11\ndb_password=realvalue\n"
    )
    r = Redactor()
    r.learn_file(secrets)
    assert r("commented alsocommented xvalue11 realvalue") == "commented alsocommented **** ****"


def test_sensitive_values_teach_the_process_wide_redactor() -> None:
    from hephaestus.secrets import REDACTOR

    name, secret = f"name-{uuid.uuid4().hex}", f"taught-{uuid.uuid4().hex}"  # never seen before
    sensitive_values({"name": name, "a.password": secret})
    assert REDACTOR(f"{secret} {name}") == f"**** {name}"
