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


class PathFilter:
    __slots__ = ("_covers_all", "_dirs", "_ignored", "_prefixes", "kept_of")

    def __init__(self, cover_dirs: Iterable[str] = (), ignore_patterns: Iterable[str] = ()):
        dirs = [d.rstrip("/") or "/" for d in cover_dirs]
        self._covers_all = not dirs or "/" in dirs
        self._dirs = frozenset(dirs)
        # str.startswith takes a tuple: one C call checks every prefix.
        self._prefixes = tuple(d + "/" for d in dirs if d != "/")
        self._ignored = _ignored_test(list(ignore_patterns))
        self.kept_of: Callable[[list[HdfsEvent]], list[HdfsEvent]] = self._events_filter()

    def passes(self, path: str) -> bool:
        if not self._covers_all and path not in self._dirs and not path.startswith(
                self._prefixes):
            return False
        return self._ignored is None or not self._ignored(path)

    def keeps(self, event: HdfsEvent) -> bool:
        if self.passes(event.path):
            return True
        if event.type is EventType.RENAME:
            return event.dst_path is not None and self.passes(event.dst_path)
        return event.type is EventType.GAP

    def _events_filter(self) -> Callable[[list[HdfsEvent]], list[HdfsEvent]]:
        """The events of a list (a chunk's, pipeline.py) this filter keeps, in order: the list
        itself when the filter keeps everything. Each event is tested first by what is
        configured and nothing else, in one comprehension; only an event that fails it (a
        RENAME or GAP may still be kept) takes keeps(). The calls through passes() and keeps()
        for every event were ~0.3 us an event (bench.ship)."""
        keeps, ignored, dirs, prefixes = self.keeps, self._ignored, self._dirs, self._prefixes
        if self._covers_all and ignored is None:
            return _all
        if self._covers_all:
            assert ignored is not None
            return lambda events: [e for e in events if not ignored(e.path) or keeps(e)]
        if ignored is None:
            return lambda events: [e for e in events
                                   if e.path.startswith(prefixes) or e.path in dirs or keeps(e)]
        return lambda events: [
            e for e in events
            if ((e.path.startswith(prefixes) or e.path in dirs) and not ignored(e.path))
            or keeps(e)]


def _all(events: list[HdfsEvent]) -> list[HdfsEvent]:
    return events


def _ignored_test(patterns: list[str]) -> Callable[[str], object] | None:
    """A test true of a path that one of `patterns` finds (re.search), None for no patterns.
    A pattern that is only a literal end (UPLOAD_IN_PROGRESS, say) is tested by str.endswith,
    ~40 % of a regex search's cost (bench.ship); the others by one alternation, one regex scan
    per path however many are configured."""
    ends: list[str] = []
    searched: list[str] = []
    for pattern in patterns:
        literal = _literal_end(pattern)
        if literal is None:
            searched.append(pattern)
        else:
            # "$" also matches before a newline that ends the text.
            ends += [literal, literal + "\n"]
    search = re.compile("|".join(f"(?:{p})" for p in searched)).search if searched else None
    if not ends:
        return search
    suffixes = tuple(ends)
    if search is None:
        return lambda path: path.endswith(suffixes)
    return lambda path: path.endswith(suffixes) or search(path)


def _literal_end(pattern: str) -> str | None:
    """The text `pattern` is, when it is only that text escaped, then "$"
    (UPLOAD_IN_PROGRESS: "._COPYING_"); else None. Checked by a round trip through re.escape: a
    pattern with any operator, class or escaped "$" does not come back the same."""
    body = pattern.removesuffix("$")
    if body == pattern:
        return None
    literal = re.sub(r"\\(.)", r"\1", body, flags=re.DOTALL)
    return literal if literal and re.escape(literal) == body else None
