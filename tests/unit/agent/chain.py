"""Checks of a run's manifest chain against the event messages it names, shared by the agent's
unit and integration tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise

from hdfs_events.manifest import Manifest


@dataclass(frozen=True, slots=True)
class Range:
    after: int | None
    end: int
    messages: frozenset[str]


def ranges_of(manifests: Iterable[Manifest]) -> list[Range]:
    """The ranges of manifests in the order they were sent, each from all of its parts: every
    part present once, no message named twice within a range."""
    # A range is (after, end, range id), as the consumer groups parts (lambdas/ingest/
    # sequencer.py): the id digests the names only, so consecutive ranges naming the same
    # messages (none, or one message straddling both ends) share it.
    out: list[Range] = []
    parts: dict[int, Manifest] = {}
    for m in manifests:
        first = next(iter(parts.values()), None)
        if first is not None and (first.after, first.end, first.range_id) != (
                m.after, m.end, m.range_id):
            out.append(_whole(parts))
            parts = {}
        assert m.part not in parts, f"part {m.part} of range ({m.after}, {m.end}] sent twice"
        parts[m.part] = m
    if parts:
        out.append(_whole(parts))
    return out


def _whole(parts: dict[int, Manifest]) -> Range:
    first = parts[min(parts)]
    assert sorted(parts) == list(range(first.parts)), (
        f"range ({first.after}, {first.end}] has parts {sorted(parts)} of {first.parts}")
    assert all((p.after, p.end, p.parts) == (first.after, first.end, first.parts)
               for p in parts.values())
    ids = [i for p in parts.values() for i in p.messages]
    assert len(ids) == len(set(ids)), f"range ({first.after}, {first.end}] names an id twice"
    return Range(first.after, first.end, frozenset(ids))


def check_chain(manifests: Iterable[Manifest], messages: Mapping[str, Iterable[int]], *,
                start: int | None, end: int | None) -> list[Range]:
    """The ranges are contiguous from `start` (the checkpoint the run resumed from) to `end`
    (the checkpoint it saved); every event message (dedup id -> txids of its events) with an
    event in a range is named by that range, and a range names only such messages. Returns
    the ranges."""
    ranges = ranges_of(manifests)
    if end == start:
        assert ranges == [], f"no range expected after {start}, got {ranges}"
        return ranges
    assert ranges, f"no manifest, expected the chain ({start}, {end}]"
    assert ranges[0].after == start, f"the chain starts after {ranges[0].after}, not {start}"
    for before, after in pairwise(ranges):
        assert after.after == before.end, (
            f"hole or overlap: ({before.after}, {before.end}] then ({after.after}, {after.end}]")
    assert ranges[-1].end == end, f"the chain ends at {ranges[-1].end}, not {end}"
    for r in ranges:
        for dedup_id in r.messages:
            assert dedup_id in messages, f"range ({r.after}, {r.end}] names unknown {dedup_id}"
    for dedup_id, txids in messages.items():
        for r in ranges:
            holds = any((r.after is None or t > r.after) and t <= r.end for t in txids)
            assert holds == (dedup_id in r.messages), (
                f"message {dedup_id} (txids {sorted(set(txids))}) "
                f"{'not named by' if holds else 'named by'} range ({r.after}, {r.end}]")
    return ranges


def check_covered(manifests: Iterable[Manifest],
                  messages: Mapping[str, Iterable[tuple[str, int, int]]],
                  expected: Iterable[tuple[str, int, int]], *, start: int | None,
                  end: int) -> list[Range]:
    """Across restarts (each run resends from its checkpoint, so ranges may overlap): the
    ranges leave no hole from `start` to `end`, and every expected event (cluster, txid,
    index) is in a message (dedup id -> event keys) named by a range covering its txid, so a
    consumer following the manifests applies every event. Identical resends of a manifest
    (the same dedup id) count once. Returns the ranges in the order they were sent."""
    unique: dict[str, Manifest] = {}
    for m in manifests:
        unique.setdefault(m.dedup_id, m)
    ranges = ranges_of(unique.values())
    covered = -1 if start is None else start
    for r in ranges:
        assert (-1 if r.after is None else r.after) <= covered, (
            f"hole: range ({r.after}, {r.end}] after the chain reached {covered}")
        covered = max(covered, r.end)
    assert covered == end, f"the ranges reach {covered}, not {end}"
    holders: dict[tuple[str, int, int], set[str]] = {}
    for dedup_id, keys in messages.items():
        for key in keys:
            holders.setdefault(key, set()).add(dedup_id)
    for key in expected:
        txid = key[1]
        assert any(r.messages & holders.get(key, set()) for r in ranges
                   if (r.after is None or txid > r.after) and txid <= r.end), (
            f"event {key}: no range covering txid {txid} names a message holding it")
    return ranges
