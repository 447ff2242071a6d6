"""The days the activity rollups owe: marked by each compaction run that published into them,
cleared by the rollups run that rewrote them; and which days one rollups run reads and writes.

Marks: one JSON document per compaction run, curated/_state/activity_rollups/pending/run=<id>/
days.json, {"run_id": ..., "partitions": [[cluster, dt], ...]}. The compaction writes it after
its catalog switch and before its watermark: a crash in between re-reads the same objects next
run, which marks their partitions again though it adds no row, so no published day goes
unmarked. A rollups run reads every document, rolls their days up and, only after its writes
succeeded, deletes exactly the documents it read: a failed or skipped run leaves them for the
next one, and a document a compaction wrote during the run is not one it read, so it stays.

Why documents in the lake, one per compaction run: a Glue workflow run property lives only as
long as its workflow run (a failed rollups run would lose the days), and one shared document
both jobs rewrite would need a read-modify-write that S3 cannot make atomic. The lake is
already where both jobs keep their state (curated/_state/), under a prefix the jobs' role may
read, write and delete.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from glue_jobs.catalog import PartitionKey
from glue_jobs.layout import ROLLUP_PENDING_PREFIX, rollup_pending_key
from glue_jobs.storage import LakeStore

_MINUTES_PER_DAY = 24 * 60


@dataclass(frozen=True, slots=True)
class PendingDays:
    documents: tuple[str, ...]  # keys of the documents read
    partitions: frozenset[PartitionKey]

    @property
    def days(self) -> frozenset[str]:
        return frozenset(dt for _, dt in self.partitions)


def mark(store: LakeStore, run_id: str, partitions: Iterable[PartitionKey]) -> str | None:
    """Writes the run's document (None when it touched no partition); returns its key."""
    touched = sorted(set(partitions))
    if not touched:
        return None
    key = rollup_pending_key(run_id)
    store.write_bytes(key, json.dumps({"run_id": run_id, "partitions": touched}).encode())
    return key


def pending(store: LakeStore) -> PendingDays:
    documents, partitions = [], set()
    for obj in store.list_objects(ROLLUP_PENDING_PREFIX):
        raw = store.read_bytes(obj.key) if obj.key.endswith("/days.json") else None
        if raw is None:
            continue
        documents.append(obj.key)
        partitions |= {(c, dt) for c, dt in json.loads(raw)["partitions"]}
    return PendingDays(tuple(documents), frozenset(partitions))


def clear(store: LakeStore, done: PendingDays) -> int:
    """Deletes the documents `done` was read from (each in a run folder of its own)."""
    for key in done.documents:
        store.delete_prefix(key.rsplit("/", 1)[0] + "/")
    return len(done.documents)


@dataclass(frozen=True, slots=True)
class DayPlan:
    """The days of one rollups run, all among the catalog's days."""
    days: tuple[str, ...]  # activity_daily and gaps_daily rewritten
    mass_delete_days: tuple[str, ...]  # mass_deletes rewritten
    read_days: tuple[str, ...]  # every event read
    history_days: tuple[str, ...]  # only the rows owner attribution reads (earlier days)


def plan(catalog_days: Sequence[str], *, pending_days: Iterable[str] = (), from_dt: str = "",
         to_dt: str = "", window_minutes: int = 10) -> DayPlan:
    """The days to roll up: `from_dt`..`to_dt` when either is given (by hand; open ends), else
    every day from the earliest pending one on. Later days too, because a day's events can name
    the owners of every later day's (a CREATE arriving late for an old day), so only then the
    result equals a full recompute; in the hourly run the earliest pending day is today or
    yesterday, and so is the cost.

    A mass-delete window starts on its dt and can reach into the next days when the window does
    not divide a day (7 minutes: 23:55-00:02): the windows of the day before the first are
    rewritten too, and the events of the days after the last are read."""
    known = sorted(set(catalog_days))
    if from_dt or to_dt:
        days = [d for d in known if (not from_dt or d >= from_dt) and (not to_dt or d <= to_dt)]
    else:
        marked = set(pending_days)
        days = [d for d in known if marked and d >= min(marked)]
    if not days:
        return DayPlan((), (), (), ())
    reach = window_reach_days(window_minutes)
    first = _shift(days[0], -reach)
    last_read = _shift(days[-1], reach)
    return DayPlan(
        days=tuple(days),
        mass_delete_days=tuple(d for d in known if first <= d <= days[-1]),
        read_days=tuple(d for d in known if first <= d <= last_read),
        history_days=tuple(d for d in known if d < first),
    )


def window_reach_days(window_minutes: int) -> int:
    """How many days after its start day a tumbling window (aligned to the epoch, as Spark's
    window() is) can end in: 0 when it divides a day, else at least 1."""
    if window_minutes < 1:
        raise ValueError(f"window must be >= 1 minute, got {window_minutes}")
    if _MINUTES_PER_DAY % window_minutes == 0:
        return 0
    return -(-window_minutes // _MINUTES_PER_DAY)


def _shift(day: str, days: int) -> str:
    return (date.fromisoformat(day) + timedelta(days=days)).isoformat()
