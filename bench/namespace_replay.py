"""The reference: HDFS namespace semantics applied in order, the state the index must reach.

Written apart from the index (a dict of paths, nothing incremental), so the property tests and
the demo hold the index to something it does not share code with but the value extraction.
"""

from __future__ import annotations

from collections.abc import Iterable

from hdfs_events.event import EventType, HdfsEvent
from lambdas.ingest.index_effects import create_values, snapshot_values, update_values


def in_order_state(events: Iterable[HdfsEvent], prefix: str,
                   seen: set[str] | None = None) -> dict[str, dict]:
    """The namespace under `prefix` after `events`; `seen` collects every path that existed at
    some point (to tell a path deleted since from one the events never created)."""
    ns: dict[str, dict] = {}
    born: list[str] = []
    for e in events:
        if e.type == EventType.CREATE:
            ns[e.path] = create_values(e)
            born.append(e.path)
        elif e.type == EventType.UNLINK:
            for p in _subtree(ns, e.path):
                del ns[p]
        elif e.type == EventType.SNAPSHOT:
            # The listed state replaces what was there; a listed directory's old content goes
            # (what still exists is listed after it).
            for p in _subtree(ns, e.path):
                del ns[p]
            ns[e.path] = snapshot_values(e)
            born.append(e.path)
        elif e.type == EventType.RENAME:
            assert e.dst_path is not None
            for p in _subtree(ns, e.dst_path):
                del ns[p]
            for p in _subtree(ns, e.path):
                ns[e.dst_path + p[len(e.path):]] = ns.pop(p)
                born.append(e.dst_path + p[len(e.path):])
        elif e.path in ns:
            ns[e.path].update(update_values(e))
    if seen is not None:
        seen.update(born)
    return {p: v for p, v in ns.items() if p == prefix or p.startswith(prefix + "/")}


def _subtree(ns: dict[str, dict], path: str) -> list[str]:
    return [p for p in ns if p == path or p.startswith(path + "/")]
