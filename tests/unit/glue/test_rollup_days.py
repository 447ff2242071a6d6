"""Which days a rollups run reads and rewrites, and the marks compaction leaves for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from glue_jobs import rollup_days
from glue_jobs.rollup_days import DayPlan, plan, window_reach_days
from glue_jobs.storage import LocalStore

DAYS = ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05"]


def test_the_scheduled_run_rolls_up_the_earliest_marked_day_and_every_later_one():
    assert plan(DAYS, pending_days={"2024-01-05", "2024-01-03"}) == DayPlan(
        days=("2024-01-03", "2024-01-04", "2024-01-05"),
        mass_delete_days=("2024-01-03", "2024-01-04", "2024-01-05"),
        read_days=("2024-01-03", "2024-01-04", "2024-01-05"),
        history_days=("2024-01-01", "2024-01-02"),
        drop_states_from="2024-01-03", write_state="2024-01-04")


def test_the_scheduled_run_starts_from_the_newest_owner_state_before_its_first_day():
    got = plan(DAYS, pending_days={"2024-01-05"},
               owner_states=["2024-01-01", "2024-01-03", "2024-01-04", "2024-01-05"])
    # After 01-04: nothing earlier read; the state after 01-05 is stale (01-05 rolled up again).
    assert (got.owner_state, got.history_days) == ("2024-01-04", ())
    assert (got.drop_states_from, got.write_state) == ("2024-01-05", "")  # 01-04's exists
    missing = plan(DAYS, pending_days={"2024-01-05"}, owner_states=["2024-01-02"])
    assert (missing.owner_state, missing.history_days) == ("2024-01-02", ("2024-01-03",
                                                                          "2024-01-04"))
    assert missing.write_state == "2024-01-04"


def test_a_window_reaching_into_the_next_day_keeps_the_state_one_day_further_back():
    got = plan(DAYS, pending_days={"2024-01-05"}, window_minutes=7,
               owner_states=["2024-01-03", "2024-01-04"])
    # Events of 01-04 are read (windows from 01-04 end on 01-05): the state before them.
    assert (got.read_days, got.owner_state, got.history_days) == (
        ("2024-01-04", "2024-01-05"), "2024-01-03", ())
    assert got.write_state == ""  # after 01-03: exists; the next run starts from it again


def test_a_run_by_hand_reads_every_earlier_day_and_leaves_the_states_alone():
    got = plan(DAYS, from_dt="2024-01-05", owner_states=["2024-01-04"])
    assert got.history_days == ("2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04")
    assert (got.owner_state, got.drop_states_from, got.write_state) == ("", "", "")


def test_nothing_marked_rolls_up_nothing():
    assert plan(DAYS) == DayPlan((), (), (), ())


def test_a_range_by_hand_ignores_the_marks_and_may_leave_an_end_open():
    assert plan(DAYS, pending_days={"2024-01-01"}, from_dt="2024-01-02",
                to_dt="2024-01-03").days == ("2024-01-02", "2024-01-03")
    assert plan(DAYS, to_dt="2024-01-02").days == ("2024-01-01", "2024-01-02")
    assert plan(DAYS, from_dt="2024-01-04").days == ("2024-01-04", "2024-01-05")


def test_a_window_that_does_not_divide_a_day_rewrites_the_day_before_and_reads_the_day_after():
    got = plan(DAYS, from_dt="2024-01-03", to_dt="2024-01-03", window_minutes=7)
    assert got == DayPlan(days=("2024-01-03",),
                          mass_delete_days=("2024-01-02", "2024-01-03"),
                          read_days=("2024-01-02", "2024-01-03", "2024-01-04"),
                          history_days=("2024-01-01",))


@pytest.mark.parametrize(("minutes", "reach"), [(10, 0), (60, 0), (1440, 0), (7, 1), (100, 1),
                                                (1500, 2), (2880, 2)])
def test_window_reach(minutes, reach):
    assert window_reach_days(minutes) == reach


def test_a_mark_written_after_the_run_read_the_marks_stays(tmp_path: Path):
    store = LocalStore(tmp_path)
    rollup_days.mark(store, "20240102T000000Z-00000001", [("c1", "2024-01-01"),
                                                          ("c2", "2024-01-02")])
    rollup_days.mark(store, "20240102T010000Z-00000002", [("c1", "2024-01-02")])
    assert rollup_days.mark(store, "20240102T020000Z-00000003", []) is None
    read = rollup_days.pending(store)
    assert read.days == {"2024-01-01", "2024-01-02"}
    rollup_days.mark(store, "20240102T030000Z-00000004", [("c1", "2024-01-05")])  # meanwhile

    assert rollup_days.clear(store, read) == 2
    assert rollup_days.pending(store).partitions == {("c1", "2024-01-05")}


def test_an_owner_state_without_its_commit_mark_is_never_read(tmp_path: Path):
    store = LocalStore(tmp_path)
    for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
        store.write_bytes(rollup_days.owner_state_data(day) + "part-0.parquet", b"x")
    rollup_days.commit_owner_state(store, "2024-01-01", "run-a")
    rollup_days.commit_owner_state(store, "2024-01-02", "run-b")
    # 01-03: a crash after Spark's files, before the mark.
    assert rollup_days.owner_states(store) == ("2024-01-01", "2024-01-02")


def test_stale_and_old_owner_states_are_deleted_with_their_files(tmp_path: Path):
    store = LocalStore(tmp_path)
    days = ("2024-01-01", "2024-01-09", "2024-01-10", "2024-01-12")
    for day in days:
        store.write_bytes(rollup_days.owner_state_data(day) + "part-0.parquet", b"x")
        rollup_days.commit_owner_state(store, day, "run")
    assert rollup_days.drop_owner_states(store, from_day="2024-01-10") == days[2:]
    assert rollup_days.drop_owner_states(
        store, before=rollup_days.keep_states_after("2024-01-12")) == ("2024-01-01",)
    assert rollup_days.owner_states(store) == ("2024-01-09",)
    assert sorted(o.key.rsplit("/", 1)[-1] for o in store.list_objects("")) == [
        "done.json", "part-0.parquet"]
