"""The days one attribution run recomputes, and the inputs it recorded (docs/glue.md, "Who made
each change").

The inputs: per (cluster, dt), the catalog location of the events and audit partitions the last
run attributed from, one JSON document curated/_state/attribute_events/inputs.json written after
the run's catalog switch. The compactions publish a changed partition at a new run=<id>/
location, so a location that differs from the recorded one is a day with new events or new
audit lines. A crash between the switch and the document recomputes the same days next run,
which replaces them with the same rows: nothing is attributed twice.

A changed day reaches its neighbours: an audit line can be written just after midnight for an
edit made just before (the time window), and an event's time bounds and its CLOSE's writer come
from the events around it. So the days written are the changed days and one day either side
(those with events), and the days read one day further still.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta

from glue_jobs.catalog import PartitionKey
from glue_jobs.layout import ATTRIBUTION_INPUTS_KEY
from glue_jobs.storage import LakeStore

# Days a changed day reaches: the window is seconds, so one day.
REACH_DAYS = 1


@dataclass(frozen=True, slots=True)
class Inputs:
    events: dict[PartitionKey, str] = field(default_factory=dict)
    audit: dict[PartitionKey, str] = field(default_factory=dict)


def load_inputs(store: LakeStore) -> Inputs:
    raw = store.read_bytes(ATTRIBUTION_INPUTS_KEY)
    if raw is None:
        return Inputs()
    doc = json.loads(raw)

    def partitions(name: str) -> dict[PartitionKey, str]:
        out: dict[PartitionKey, str] = {}
        for key, location in doc[name].items():
            cluster, _, dt = key.partition("/")
            out[(cluster, dt)] = location
        return out
    return Inputs(partitions("events"), partitions("audit"))


def save_inputs(store: LakeStore, inputs: Inputs) -> None:
    doc = {name: {f"{c}/{d}": loc for (c, d), loc in sorted(part.items())}
           for name, part in (("events", inputs.events), ("audit", inputs.audit))}
    store.write_bytes(ATTRIBUTION_INPUTS_KEY, json.dumps(doc, indent=1).encode())


@dataclass(frozen=True, slots=True)
class DayPlan:
    write: tuple[PartitionKey, ...]  # attribution partitions recomputed and replaced
    read: tuple[PartitionKey, ...]  # events and audit partitions read for them


def plan(now: Inputs, seen: Inputs, *, reach_days: int = REACH_DAYS) -> DayPlan:
    """`now`: the catalogs' current locations; `seen`: what the last run recorded."""
    changed = ({k for k, loc in now.events.items() if seen.events.get(k) != loc}
               | {k for k, loc in now.audit.items() if seen.audit.get(k) != loc})
    write = _around(changed, reach_days) & set(now.events)
    return DayPlan(write=tuple(sorted(write)), read=tuple(sorted(_around(write, reach_days))))


def _around(keys: Iterable[PartitionKey], days: int) -> set[PartitionKey]:
    return {(c, (date.fromisoformat(d) + timedelta(days=s)).isoformat())
            for c, d in keys for s in range(-days, days + 1)}

