"""`accuracy --repair` and `--budget-s`, the pure parts: SQL literals of hostile keys, the signal
filters and their batches, the refusal above --max-keys, the time budget (an injected clock:
nothing here measures real time), and the report before and after."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hephaestus.accuracy import render, repair, run, sinkdb
from hephaestus.accuracy.bisect import DeepOptions, deep_diff
from hephaestus.accuracy.model import AccuracyReport, Counts, Filters, Key, KeyDiff, KeyList, TableResult, judge
from hephaestus.accuracy.repair import Batch, RepairReport, TableRepair, TooManyKeys
from hephaestus.errors import HephaestusError
from hephaestus.generator.model import AccuracySpec
from hephaestus.safety.gate import Refused
from hephaestus.snapshot.signal import execute_snapshot
from tests.unit.test_accuracy import pair
from tests.unit.test_accuracy_bisect import SMALL, MemorySide, changed, tables


def unquote(text: str) -> str:
    """What PostgreSQL reads from an E'…' literal that uses only the two escapes `literal` writes."""
    assert text.startswith("E'") and text.endswith("'")
    body, out, i = text[2:-1], [], 0
    while i < len(body):
        pair_ = body[i : i + 2]
        if pair_ in ("''", "\\\\"):
            out.append(pair_[0])
            i += 2
        else:
            assert body[i] not in "'\\", f"an unescaped {body[i]!r} would end or bend the literal"
            out.append(body[i])
            i += 1
    return "".join(out)


@pytest.mark.parametrize(
    "value",
    ["o'brien", "a\\'b", "\\", "'", "''; DROP TABLE users; --", 'q"uo"te', "ü 🙂 中", "\\x00", "a?b", "$1", "%s"],
)
def test_a_hostile_text_key_is_one_literal_that_reads_back_as_itself(value: str) -> None:
    assert unquote(repair.literal(value)) == value


@given(st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"])))
def test_any_text_without_nul_round_trips(value: str) -> None:
    assert unquote(repair.literal(value)) == value


def test_nul_is_refused_since_postgresql_text_cannot_hold_it() -> None:
    with pytest.raises(HephaestusError, match="NUL"):
        repair.literal("a\x00b")


@pytest.mark.parametrize(
    "value, text",
    [
        (7, "E'7'"),
        (True, "E'true'"),
        (Decimal("1.50"), "E'1.50'"),
        (uuid.UUID(int=1), "E'00000000-0000-0000-0000-000000000001'"),
        (b"\x01\xff", "E'\\\\x01ff'"),  # bytea's hex form; the backslash doubled in E''
        (dt.date(2026, 1, 2), "E'2026-01-02'"),
        (dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC), "E'2026-01-02T03:04:05+00:00'"),
    ],
)
def test_typed_keys_are_written_as_text_the_column_type_reads(value: object, text: str) -> None:
    assert repair.literal(value) == text


def test_a_key_of_an_unknown_type_is_refused() -> None:
    with pytest.raises(HephaestusError, match="cannot name a key of type list"):
        repair.literal([1])


def test_filters_for_single_and_composite_keys() -> None:
    assert repair.key_filter(["id"], [(1,), ("a'b",)]) == "\"id\" IN (E'1', E'a''b')"
    composite = repair.key_filter(["org", 'we"ird'], [(1, "x"), (2, "y")])
    assert composite == "(\"org\", \"we\"\"ird\") IN ((E'1', E'x'), (E'2', E'y'))"


def test_the_signal_data_is_what_snapshot_send_writes() -> None:
    where = repair.key_filter(["user_id"], [("ü'1",)])
    assert repair.signal_data("public.users", where) == execute_snapshot("bob", ["public.users"], where).data


def keys(n: int, width: int = 6) -> list[Key]:
    return [(f"k{i:0{width}d}",) for i in range(n)]


def test_batches_hold_at_most_batch_keys() -> None:
    found = repair.batches("public.users", ["id"], keys(5), 2)
    assert [len(b.keys) for b in found] == [2, 2, 1]
    assert [k for b in found for k in b.keys] == keys(5)
    assert found[0] == Batch(tuple(keys(2)), "\"id\" IN (E'k000000', E'k000001')")


def test_batches_fit_the_signal_row_counted_as_stored() -> None:
    wide = [("ü" * 30 + str(i),) for i in range(200)]  # each ü is 6 characters of JSON
    found = repair.batches("public.users", ["id"], wide, 500)
    assert len(found) > 1 and [k for b in found for k in b.keys] == wide
    sizes = [len(repair.signal_data("public.users", b.filter)) for b in found]
    assert max(sizes) <= repair.SIGNAL_DATA_MAX
    assert all(
        len(repair.signal_data("public.users", repair.key_filter(["id"], [*b.keys, wide[0]]))) > 2048
        for b in found[:-1]
    )


def test_a_key_too_long_for_any_signal_is_an_error() -> None:
    with pytest.raises(HephaestusError, match="too long for one signal"):
        repair.batches("public.users", ["id"], [("x" * 3000,)], 500)


def diff(missing: int = 0, different: int = 0, extra: int = 0, listed: bool = True, uncompared: int = 0) -> KeyDiff:
    def kl(prefix: str, n: int) -> KeyList:
        return KeyList(n, tuple((f"{prefix}{i}",) for i in range(n)) if listed else ())

    return KeyDiff(kl("m", missing), kl("x", extra), kl("d", different), 3, uncompared)


def result(verdict: str = "mismatch", found: KeyDiff | None = None, slot: str | None = "it_x_bob") -> TableResult:
    return TableResult(pair(), verdict, Counts(10, 9), Filters("", ""), slot, 0, 0, found)  # type: ignore[arg-type]


def test_the_keys_to_snapshot_are_the_missing_and_different_ones() -> None:
    again, extra = repair.wanted(result(found=diff(missing=2, different=1, extra=1)))
    assert again == (("m0",), ("m1",), ("d0",)) and extra == (("x0",),)
    assert repair.wanted(result("match", diff())) == ((), ())
    with pytest.raises(HephaestusError, match="not every differing key"):
        repair.wanted(result(found=diff(missing=2, listed=False)))


def test_more_keys_than_max_keys_is_refused_with_the_count_and_exit_2() -> None:
    report = AccuracyReport((result(found=diff(missing=3, different=2, extra=4)), result("match", diff())), True, 1)
    assert repair.check_size(report, 5, delete_extra=False) == 5
    with pytest.raises(TooManyKeys, match=r"9 keys differ, more than --max-keys 5 \(.*users: 9\): nothing sent") as e:
        repair.check_size(report, 5, delete_extra=True)
    assert e.value.exit_code == 2


def test_the_source_connector_is_named_from_the_slot() -> None:
    assert repair.source_connector(result()) == "it_x_bob_source_connector"
    with pytest.raises(HephaestusError, match="no replication slot"):
        repair.source_connector(result(slot=None))


class Clock:
    """Time moves only when a side is asked something: one second a query."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Timed(MemorySide):
    def __init__(self, rows: dict[Key, str], clock: Clock) -> None:
        super().__init__(rows)
        self.clock = clock

    def _in(self, rng):  # type: ignore[no-untyped-def]
        self.clock.now += 1
        return super()._in(rng)


def test_the_budget_stops_comparing_and_says_how_much_was_left() -> None:
    clock = Clock()
    rows = tables(200)
    sink = changed(rows, delete=[(3,), (150,)])
    full = deep_diff(Timed(rows, Clock()), Timed(sink, Clock()), SMALL)[1]
    assert full.missing.total == 2 and full.uncompared == 0
    _, cut = deep_diff(Timed(rows, clock), Timed(sink, clock), DeepOptions(4, 8, 100, deadline=6, clock=clock))
    assert cut.uncompared > 0 and cut.missing.total < 2
    assert judge(AccuracySpec(), Counts(200, 198), cut, 0)[0] == "mismatch"  # the counts already differ


def test_a_budget_cut_with_nothing_found_is_partial_not_match() -> None:
    clock = Clock()
    rows = tables(200)
    _, cut = deep_diff(Timed(rows, clock), Timed(dict(rows), clock), DeepOptions(4, 8, 100, deadline=1, clock=clock))
    assert cut.total == 0 and cut.uncompared == 200
    verdict = judge(AccuracySpec(), Counts(200, 200), cut, 0)[0]
    assert verdict == "partial"
    report = AccuracyReport((result(verdict, cut),), True, 1)
    assert report.exit_code == 2
    assert "partial: 200 rows not compared" in render.text(report)
    assert json.loads(render.as_json(report))["tables"][0]["deep"]["uncompared_rows"] == 200


def test_a_table_whose_turn_comes_after_the_budget_is_not_compared() -> None:
    clock = Clock()
    options = run.budgeted(run.AccuracyOptions(deep=True, budget_s=5), 0.0, clock)
    clock.now = 5
    job = run.CompareJob(pair(), "dsn that is never opened", "dsn", (), options)
    found = run.compare(job)
    assert (found.verdict, found.counts, found.error) == ("partial", None, None)
    assert "not compared: the time budget" in render.text(AccuracyReport((found,), True, 5))


def repaired_report(still: KeyDiff, error: str | None = None) -> RepairReport:
    before = result(found=diff(missing=2, different=1, extra=1))
    again = TableResult(pair(), "mismatch" if still.total else "match", Counts(10, 10), diff=still)
    fix = TableRepair(
        before.pair.name, "it_x_bob_source_connector", (("m0",), ("m1",), ("d0",)), ("s1", "s2"), (("x0",),), 0, error
    )
    return RepairReport(AccuracyReport((before,), True, 1), (fix,), AccuracyReport((again,), True, 1))


def test_a_repair_that_leaves_an_extra_row_exits_2_and_reports_before_and_after() -> None:
    report = repaired_report(diff(extra=1))
    assert report.exit_code == 2
    (row,) = render.repair_rows(report)
    assert row == {
        "table": "bob.public.users → auth.public.users",
        "connector": "it_x_bob_source_connector",
        "missing": 2,
        "different": 1,
        "extra": 1,
        "resnapshotted": 3,
        "signals": ["s1", "s2"],
        "extra_deleted": 0,
        "extra_kept": 1,
        "repaired": 3,
        "still_different": 1,
    } | {"error": None}
    text = render.repair_text(report)
    assert text.startswith("before:\n") and "\nrepair:\n" in text and "\nafter:\n" in text
    assert "re-snapshotted 3 keys in 2 signals" in text and "1 kept (--delete-extra removes them)" in text
    doc = json.loads(render.repair_json(report))
    assert doc["exit_code"] == 2 and doc["before"]["summary"]["mismatch"] == 1 and doc["after"]["tables"]


def test_a_full_repair_exits_0_and_a_failed_one_1() -> None:
    assert repaired_report(diff()).exit_code == 0
    assert repaired_report(diff(), error="signal refused").exit_code == 1
    unchanged = RepairReport(AccuracyReport((result("match", diff()),), True, 1), (), None)
    assert unchanged.exit_code == 0 and render.repair_text(unchanged).endswith("repair: nothing to repair\n")


def test_keys_still_different_after_a_repair_are_not_counted_repaired() -> None:
    report = repaired_report(diff(missing=1))  # m0 still missing
    assert repair.outcome(report.tables[0], report.after_of(report.tables[0])) == (2, 1)


def test_the_extra_rows_delete_is_keyed_by_parameters_and_cleared_by_its_own_flag() -> None:
    sink = pair().sink
    text, params = sinkdb.statement(sink, ["org", "id"], [(1, "a'b"), (2, "c")])
    assert params == [1, "a'b", 2, "c"]
    assert "a'b" not in repr(text)
    cleared = sinkdb.judged(sink, [(1,)], None)
    assert cleared.cluster == "database auth" and cleared.names() == {"public.users"}
    other = sinkdb.judged(pair().source, [(1,)], None)
    with pytest.raises(HephaestusError, match="not cleared by the gate"):
        sinkdb.remove_rows(None, sink, ["id"], [(1,)], other)  # type: ignore[arg-type]


def test_the_gate_still_refuses_a_delete_that_is_not_the_commands_own() -> None:
    from hephaestus.safety.effects import Effect
    from hephaestus.safety.gate import Item, check

    item = Item("database auth", "public.users", "delete extra rows", (Effect("rows-deleted", "x"),))
    with pytest.raises(Refused):
        check([item])  # without --delete-extra's consent
