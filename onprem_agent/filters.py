"""Which events the agent ships: SSM's cover-dirs allow-list and ignore-patterns deny-list.

A path passes when it lies under one of `cover_dirs` (all paths when the list is empty),
matched on path-component boundaries (/data/a covers /data/a and /data/a/x, not /data/ab), and
matches none of `ignore_patterns` (regular expressions searched anywhere in the path).

A RENAME is kept when either side passes: moving a file into a covered directory, or out of it,
are changes to the covered namespace that a reader must see. Kept alone, though, a rename from an
ignored name carries nothing of the file: Hadoop's RENAME has no type, size or owner. So the
shipped config ignores nothing that is renamed into place, least of all `x._COPYING_`, the
temporary file of every `hdfs dfs -put` (its CREATE names the owner and its CLOSE the size; the
index moves them to `x` with the rename, and the rollups count the rename as the end of the
upload). Only the sync (onprem_agent/sync) ignores it by default, through UPLOAD_IN_PROGRESS:
it copies the file once it has its final name, never a partial one.

A GAP record always passes: its path "/" stands for the whole stream (edits the NameNode purged,
whatever paths they touched), and dropping it would hide the gap. SNAPSHOT records are paths
like any other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from hdfs_events.event import EventType, HdfsEvent

# The temporary name FsShell (`hdfs dfs -put`, -copyFromLocal, -cp) writes before renaming the
# file to its own (Hadoop's CommandWithDestination: target.suffix("._COPYING_")).
UPLOAD_IN_PROGRESS = r"\._COPYING_$"


_Batch = tuple[HdfsEvent, ...]


class PathFilter:
    __slots__ = ("_covers_all", "_dirs", "_ignored", "_prefixes", "kept_of_batch")

    def __init__(self, cover_dirs: Iterable[str] = (), ignore_patterns: Iterable[str] = ()):
        dirs = [d.rstrip("/") or "/" for d in cover_dirs]
        self._covers_all = not dirs or "/" in dirs
        self._dirs = frozenset(dirs)
        # str.startswith takes a tuple: one C call checks every prefix.
        self._prefixes = tuple(d + "/" for d in dirs if d != "/")
        patterns = list(ignore_patterns)
        # One alternation, one regex scan per path, however many patterns are configured.
        self._ignored = (re.compile("|".join(f"(?:{p})" for p in patterns)).search
                         if patterns else None)
        self.kept_of_batch: Callable[[_Batch], _Batch] = self._batch_filter()

    def passes(self, path: str) -> bool:
        if not self._covers_all and path not in self._dirs and not path.startswith(
                self._prefixes):
            return False
        return self._ignored is None or self._ignored(path) is None

    def keeps(self, event: HdfsEvent) -> bool:
        if self.passes(event.path):
            return True
        if event.type is EventType.RENAME:
            return event.dst_path is not None and self.passes(event.dst_path)
        return event.type is EventType.GAP

    def kept(self, events: _Batch) -> _Batch:
        """The events of one batch this filter keeps, in order (`events` itself when all)."""
        if len(events) == 1:  # most batches: no tuple built
            return events if self.keeps(events[0]) else ()
        kept = tuple(filter(self.keeps, events))
        return events if len(kept) == len(events) else kept

    def _batch_filter(self) -> Callable[[_Batch], _Batch]:
        """`kept`, with the pipeline's common case first: a batch of one event whose path
        passes, tested by what is configured and nothing else. The agent runs it on every
        batch; the calls through passes() and keeps() were ~0.3 us an event (bench.ship).
        A RENAME or GAP whose path fails, and batches of several events, take `kept`."""
        general, ignored, dirs, prefixes = self.kept, self._ignored, self._dirs, self._prefixes
        if self._covers_all and ignored is None:
            return _all
        if self._covers_all:
            assert ignored is not None

            def kept(events: _Batch) -> _Batch:
                if len(events) == 1 and ignored(events[0].path) is None:
                    return events
                return general(events)
        elif ignored is None:
            def kept(events: _Batch) -> _Batch:
                if len(events) == 1:
                    path = events[0].path
                    if path.startswith(prefixes) or path in dirs:
                        return events
                return general(events)
        else:
            def kept(events: _Batch) -> _Batch:
                if len(events) == 1:
                    path = events[0].path
                    if (path.startswith(prefixes) or path in dirs) and ignored(path) is None:
                        return events
                return general(events)
        return kept


def _all(events: _Batch) -> _Batch:
    return events
