"""The days the activity rollups owe: marked by each compaction run that published into them
and each attribution run that rewrote who made their events (the mass deletes' users), cleared
by the rollups run that rewrote them; which days one rollups run reads and writes; and which
owner state it starts from, writes and deletes (docs/glue.md, "The owner state").

Marks: one JSON document per compaction or attribution run, curated/_state/activity_rollups/
pending/run=<id>/days.json, {"run_id": ..., "partitions": [[cluster, dt], ...]}. Each job writes
it after its catalog switch and before its watermark (the attribution: its inputs document): a
crash in between re-reads the same inputs next run, which marks their partitions again though it
changes no row, so no published day goes unmarked. A rollups run reads every document, rolls
their days up and, only after its writes succeeded, deletes exactly the documents it read: a
failed or skipped run leaves them for the next one, and a document a job wrote during the run is
not one it read, so it stays.

Why documents in the lake, one per run: a Glue workflow run property lives only as long as its
workflow run (a failed rollups run would lose the days), and one shared document the jobs
rewrite would need a read-modify-write that S3 cannot make atomic. The lake is already where the
jobs keep their state (curated/_state/), under a prefix the jobs' role may read, write and
delete.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from glue_jobs.catalog import PartitionKey
from glue_jobs.layout import OWNER_STATE_PREFIX, ROLLUP_PENDING_PREFIX, owner_state_prefix, rollup_pending_key
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
    owner_state: str = ""  # the owner state read: after this day ("": none, history from the start)
    drop_states_from: str = ""  # owner states after this day or later are stale: deleted
    write_state: str = ""  # the owner state this run writes: after this day ("": none)


def plan(catalog_days: Sequence[str], *, pending_days: Iterable[str] = (), from_dt: str = "",
         to_dt: str = "", window_minutes: int = 10, owner_states: Iterable[str] = ()) -> DayPlan:
    """The days to roll up: `from_dt`..`to_dt` when either is given (by hand; open ends), else
    every day from the earliest pending one on. Later days too, because a day's events can name
    the owners of every later day's (a CREATE arriving late for an old day), so only then the
    result equals a full recompute; in the hourly run the earliest pending day is today or
    yesterday, and so is the cost.

    A mass-delete window starts on its dt and can reach into the next days when the window does
    not divide a day (7 minutes: 23:55-00:02): the windows of the day before the first are
    rewritten too, and the events of the days after the last are read.

    Owner state (scheduled runs only; `owner_states`: the days after which one is committed):
    the run reads the newest state before its first read day and the owner facts of the days
    between; every state after a day it rolls up is stale (that day's facts changed) and
    goes. It writes the state after the day before its newest (less the window's reach), which
    the next hourly run, rolling up the newest day again, starts from."""
    known = sorted(set(catalog_days))
    by_hand = bool(from_dt or to_dt)
    if by_hand:
        days = [d for d in known if (not from_dt or d >= from_dt) and (not to_dt or d <= to_dt)]
    else:
        marked = set(pending_days)
        days = [d for d in known if marked and d >= min(marked)]
    if not days:
        return DayPlan((), (), (), ())
    reach = window_reach_days(window_minutes)
    first = _shift(days[0], -reach)
    last_read = _shift(days[-1], reach)
    valid = () if by_hand else sorted(d for d in owner_states if d < days[0])
    state = max((d for d in valid if d < first), default="")
    after = _shift(days[-1], -1 - reach)
    write = not by_hand and after not in valid and any(d <= after for d in known)
    return DayPlan(
        days=tuple(days),
        mass_delete_days=tuple(d for d in known if first <= d <= days[-1]),
        read_days=tuple(d for d in known if first <= d <= last_read),
        history_days=tuple(d for d in known if state < d < first),
        owner_state=state,
        drop_states_from="" if by_hand else days[0],
        write_state=after if write else "",
    )


# --- owner state -------------------------------------------------------------------------------
# curated/_state/activity_rollups/owners/through=<d>/: data/ (Spark's Parquet files of
# glue_jobs.rollups.owner_state) and commit/done.json, a single PUT made after Spark's write
# returned. A reader takes only states with commit/done.json, so a state a crashed run left half
# written is never read; the next run that owes that state writes it again (overwrite).
_COMMITTED = "commit/done.json"  # in a folder of its own: delete_prefix takes folders
# States older than this before the newest are deleted: late data for a day older than that
# makes its run read the owner facts of every day (correct, only slower).
KEEP_STATES_DAYS = 7


def owner_state_data(through: str) -> str:
    return owner_state_prefix(through) + "data/"


def owner_states(store: LakeStore) -> tuple[str, ...]:
    """The days after which a committed owner state exists, oldest first."""
    return tuple(sorted(d for d, done in _states(store).items() if done))


def commit_owner_state(store: LakeStore, through: str, run_id: str) -> None:
    store.write_bytes(owner_state_prefix(through) + _COMMITTED,
                      json.dumps({"through": through, "run_id": run_id}).encode())


def drop_owner_states(store: LakeStore, *, from_day: str = "", before: str = ""
                      ) -> tuple[str, ...]:
    """Deletes the states after `from_day` or later, and those (and leftovers of crashed
    writes) before `before`; the commit mark first, so no reader takes a half-deleted state."""
    dropped = tuple(d for d in sorted(_states(store))
                    if (from_day and d >= from_day) or (before and d < before))
    for d in dropped:
        store.delete_prefix(owner_state_prefix(d) + _COMMITTED.split("/")[0] + "/")
        store.delete_prefix(owner_state_prefix(d))
    return dropped


def _states(store: LakeStore) -> dict[str, bool]:
    found: dict[str, bool] = {}
    for obj in store.list_objects(OWNER_STATE_PREFIX):
        head, _, rest = obj.key[len(OWNER_STATE_PREFIX):].partition("/")
        day = head.removeprefix("through=")
        found[day] = found.get(day, False) or rest == _COMMITTED
    return found


def keep_states_after(through: str) -> str:
    return _shift(through, -KEEP_STATES_DAYS)


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
