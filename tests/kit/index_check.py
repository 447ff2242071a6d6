"""The check of the namespace index the demo and the e2e chain make: what `hdfs-events index`
reads back from DynamoDB (moto server) under the indexed prefixes equals the source events
applied in order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from hdfs_events.event import HdfsEvent
from hdfs_events_cli.index_reader import IndexEntry, IndexReader
from tests.kit.replay import in_order_state

ATTRIBUTES = ("type", "size", "mtime", "atime", "owner", "group", "perms", "replication",
              "symlink_target")


@dataclass(frozen=True, slots=True)
class IndexCheck:
    prefixes: tuple[str, ...]
    entries: int  # live entries the index holds under the prefixes
    expected: int  # paths the events created (or moved in) that still exist
    learned: int  # live entries for paths the events never created: they predate the logs
    differences: tuple[str, ...]  # the first few paths that differ, with how

    @property
    def exact(self) -> bool:
        return not self.differences and self.entries == self.expected + self.learned


def check_index(events: Sequence[HdfsEvent], table: str, prefixes: Sequence[str]) -> IndexCheck:
    """`events` are the source of truth of one cluster, in txid order."""
    cluster = events[0].cluster if events else ""
    expected: dict[str, dict] = {}
    seen: set[str] = set()
    for prefix in prefixes:
        expected |= in_order_state(events, prefix.rstrip("/") or "/", seen)
    reader = IndexReader(table, cluster)
    live = {e.path: e for prefix in prefixes for e in _walk(reader, prefix.rstrip("/") or "/")}
    differences, learned = [], 0
    for path in sorted(expected.keys() | live.keys()):
        want, got = expected.get(path), live.get(path)
        if got is None:
            differences.append(f"{path}: not in the index")
            continue
        if want is None:
            # A parent directory the logs never created, a file appended to or changed that
            # existed before them: the index holds what the events said about it. A path the
            # events created and then removed must not be live.
            if path in seen:
                differences.append(f"{path}: deleted, but live in the index")
            else:
                learned += 1
            continue
        values = {a: getattr(got, a) for a in ATTRIBUTES}
        wrong = [f"{a} {values[a]!r} != {want.get(a)!r}" for a in ATTRIBUTES
                 if a in want and values[a] != want[a]]
        if wrong:
            differences.append(f"{path}: {', '.join(wrong)}")
        elif got.in_progress:
            differences.append(f"{path}: still marked in progress by {got.in_progress[0]}")
    return IndexCheck(prefixes=tuple(prefixes), entries=len(live), expected=len(expected),
                      learned=learned,
                      differences=tuple(differences[:5]))


def _walk(reader: IndexReader, root: str) -> Iterator[IndexEntry]:
    entry = reader.stat(root)
    if entry is None or entry.deleted:
        return
    yield entry
    stack = [root]
    while stack:
        for child in reader.ls(stack.pop()):
            yield child
            if child.type == "DIRECTORY":
                stack.append(child.path)
