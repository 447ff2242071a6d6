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
        history_days=("2024-01-01", "2024-01-02"))


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
