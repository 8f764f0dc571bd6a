"""dlq.model exactly: which DLQ headers `dlq show` shows (and how a header's bytes read), where a
parked record goes back to or why it cannot, the headers it is sent back with, and what a
decoded key or value shows of a secret. Written so that mutants of each die."""

from __future__ import annotations

import uuid

from hephaestus.dlq.model import Replay, errors_of, masked, own_headers, replay_of
from hephaestus.kafka import Record
from hephaestus.secrets import MASK, REDACTOR

E = "__connect.errors."
# A value no other test uses: the process-wide redactor is shared (see TESTING.md).
SECRET = f"dlq-model-{uuid.uuid4()}"
REDACTOR.learn(SECRET)


def record(*headers: tuple[str, bytes | None]) -> Record:
    return Record("dlq.s", 0, 7, None, b"k", b"v", headers)


# --- errors_of (and how a header's bytes read) --------------------------------------------------


def test_only_the_shown_error_headers_by_their_short_names_redacted() -> None:
    got = errors_of(
        record(
            (E + "stage", b"VALUE_CONVERTER"),
            (E + "class.name", b"org.C"),
            (E + "exception.class.name", b"org.E"),
            (E + "exception.message", f"bad row: password {SECRET}".encode()),
            (E + "topic", b"t"),
            (E + "partition", b"2"),
            (E + "offset", b"41"),
            (E + "exception.stacktrace", b"at org.C.x(C.java:1)"),  # long, may quote rows: not shown
            (E + "connector.name", b"s"),  # not shown
            ("topic", b"own"),  # the record's own header, named like a shown one
            ("x" + E + "stage", b"own"),  # the prefix, but not at the start
        )
    )
    assert got == {
        "stage": "VALUE_CONVERTER",
        "class.name": "org.C",
        "exception.class.name": "org.E",
        "exception.message": f"bad row: password {MASK}",
        "topic": "t",
        "partition": "2",
        "offset": "41",
    }


def test_a_header_without_a_value_reads_empty_and_bad_utf8_is_replaced_not_fatal() -> None:
    got = errors_of(record((E + "stage", None), (E + "exception.message", b"caf\xe9 \xff!")))
    assert got == {"stage": "", "exception.message": "caf\ufffd \ufffd!"}


def test_a_record_without_error_headers_shows_none() -> None:
    assert errors_of(record()) == {}
    assert errors_of(record(("trace", b"1"))) == {}


# --- replay_of ---------------------------------------------------------------------------------

NO_HEADERS = (
    "no __connect.errors.topic/partition header: the sink's "
    "errors.deadletterqueue.context.headers.enable was off when it was parked"
)


def test_a_record_goes_back_to_its_topic_and_partition() -> None:
    r = record(("own", b"1"), (E + "topic", b"orders"), (E + "partition", b"12"), (E + "offset", b"3"))
    assert replay_of(r) == Replay(r, "orders", 12, "")


def test_partition_zero_is_a_partition() -> None:
    r = record((E + "topic", b"orders"), (E + "partition", b"0"))
    assert replay_of(r) == Replay(r, "orders", 0)


def test_without_a_topic_or_a_numeric_partition_it_cannot_go_back_and_says_why() -> None:
    cases = [
        record(),
        record((E + "topic", b"orders")),  # no partition
        record((E + "partition", b"1")),  # no topic
        record((E + "topic", b""), (E + "partition", b"1")),  # an empty topic
        record((E + "topic", b"orders"), (E + "partition", b"-1")),
        record((E + "topic", b"orders"), (E + "partition", b"one")),
        record((E + "topic", None), (E + "partition", None)),
        record(("topic", b"orders"), ("partition", b"1")),  # the record's own headers: not Connect's
    ]
    for r in cases:
        assert replay_of(r) == Replay(r, "", -1, NO_HEADERS), r.headers


# --- own_headers -------------------------------------------------------------------------------


def test_a_record_goes_back_with_its_own_headers_in_order_an_empty_one_as_empty_bytes() -> None:
    r = record(("a", b"1"), (E + "topic", b"t"), ("b", None), (E + "stage", b"X"), ("c", b""), ("x" + E, b"2"))
    assert own_headers(r) == [("a", b"1"), ("b", b""), ("c", b""), ("x" + E, b"2")]
    assert own_headers(record((E + "topic", b"t"))) == []


# --- masked ------------------------------------------------------------------------------------


def test_fields_of_secret_looking_names_are_masked_at_any_depth() -> None:
    value = {
        "id": 1,
        "password": "pw1",
        "api_key": {"nested": "whole"},  # masked whole, whatever it holds
        "token": None,  # nothing to hide: stays null
        "name": None,
        "note": f"the key is {SECRET}",
        "rows": [{"secret": "s"}, {"pwd": 0, "ok": True}, "plain", 2.5],
        3: "a number as a key",
    }
    assert masked(value) == {
        "id": 1,
        "password": MASK,
        "api_key": MASK,
        "token": None,
        "name": None,
        "note": f"the key is {MASK}",
        "rows": [{"secret": MASK}, {"pwd": MASK, "ok": True}, "plain", 2.5],
        3: "a number as a key",
    }


def test_scalars_pass_through_strings_through_the_redactor() -> None:
    assert masked(SECRET) == MASK
    assert masked(f"[{SECRET}]") == f"[{MASK}]"
    assert [masked(None), masked(5), masked(False), masked("plain")] == [None, 5, False, "plain"]
    assert masked([SECRET, [SECRET]]) == [MASK, [MASK]]
