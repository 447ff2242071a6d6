"""The index as the logic sees it: a small store interface and a per-invocation cache.

The store is DynamoDB in production (dal.DynamoIndexStore) and a dict in the logic's tests.
Writes are deferred and coalesced: an entry changed by several events of a message (CREATE then
CLOSE, say), or by a subtree walk and the events after it, is written once, when the message is
done. A subtree walk reads the table's partitions with this invocation's unwritten changes laid
over them, so it sees what the table will hold without a write per partition it visits; and a
page it comes back to after descending into a child is served from the page read before. Each
write is compare-and-set on the entry's `rev` and a message's writes are issued together
(store.put_many): a concurrent invocation that changed any entry since it was read makes the
flush fail with ConcurrentUpdate, and the message's events are applied again from fresh reads
(every merge is idempotent, so the writes that did land are harmless).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from hdfs_events import names
from lambdas.ingest.index_model import Entry, empty_entry


class ConcurrentUpdate(RuntimeError):
    """Another writer changed an entry between our read and our write."""


class IndexStore(Protocol):
    def get_many(self, cluster: str, paths: Iterable[str]) -> dict[str, Entry]:
        """Stored entries among `paths` (absent ones are left out)."""
        ...

    def put_many(self, writes: Sequence[tuple[Entry, int]]) -> list[str]:
        """Writes each entry if its stored rev is the expected one (0: not stored); returns the
        paths whose condition failed. Every write is attempted whatever happens to the others;
        any other error is raised once all have finished."""
        ...

    def children(self, cluster: str, parent: str, *, after: str | None,
                 limit: int) -> list[Entry]:
        """Entries whose parent directory is `parent`, by name, after `after`."""
        ...


def child_path(parent: str, name: str) -> str:
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


def name_of(path: str) -> str:
    return names.split_path(path)[1]


def ancestors(path: str) -> list[str]:
    """"/a/b/c" -> ["/", "/a", "/a/b"]."""
    parts = path.strip("/").split("/") if path != "/" else []
    return ["/", *("/" + "/".join(parts[:i]) for i in range(1, len(parts)))][:len(parts)]


class IndexView:
    """Entries of one cluster read at most once per invocation, and written only on change."""

    def __init__(self, store: IndexStore, cluster: str) -> None:
        self.store, self.cluster = store, cluster
        self._cache: dict[str, Entry] = {}
        self._dirty: dict[str, int] = {}  # path -> rev stored in the table (0: not stored)
        self._dirty_names: dict[str, set[str]] = {}  # parent -> names of its dirty children
        self._pages: dict[str, _StoredPage] = {}  # parent -> the last page read from the table
        self.reads = self.writes = 0

    def prefetch(self, paths: Iterable[str]) -> None:
        missing = [p for p in dict.fromkeys(paths) if p not in self._cache]
        if not missing:
            return
        self.reads += len(missing)
        found = self.store.get_many(self.cluster, missing)
        for path in missing:
            self._cache[path] = found.get(path) or empty_entry(self.cluster, path)

    def get(self, path: str) -> Entry:
        if path not in self._cache:
            # With its ancestors: where an event lands depends on them (a RENAME's
            # destination is read alone, then its parents), so one request instead of two.
            self.prefetch([*ancestors(path), path])
        return self._cache[path]

    def save(self, old: Entry, new: Entry) -> Entry:
        if new.same_state(old):
            return old
        if old.path not in self._dirty:
            self._dirty[old.path] = old.rev
            parent, name = names.split_path(old.path)
            self._dirty_names.setdefault(parent, set()).add(name)
        saved = replace(new, rev=self._dirty[old.path] + 1)
        self._cache[old.path] = saved
        return saved

    def flush(self) -> None:
        if not self._dirty:
            return
        writes = [(self._cache[path], base) for path, base in self._dirty.items()]
        self.writes += len(writes)
        try:
            refused = self.store.put_many(writes)
        except Exception:
            # Some writes may have landed: what the table holds is no longer what we cached.
            self.forget()
            raise
        if refused:
            self.forget()
            more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
            raise ConcurrentUpdate(
                f"index entry {self.cluster}:{refused[0]}{more} changed meanwhile")
        self._dirty.clear()
        self._dirty_names.clear()
        self._pages.clear()  # they lack what was just written

    def children(self, parent: str, *, after: str | None, limit: int) -> list[Entry]:
        page = self._pages[parent].rest(after, limit) if parent in self._pages else None
        if page is None:
            self.reads += 1
            page = self.store.children(self.cluster, parent, after=after, limit=limit)
            self._pages[parent] = _StoredPage(after, page, complete=len(page) < limit)
            for entry in page:
                if entry.path not in self._dirty:
                    self._cache[entry.path] = entry
        return self._with_unwritten(parent, page, after=after, limit=limit)

    def _with_unwritten(self, parent: str, page: list[Entry], *, after: str | None,
                        limit: int) -> list[Entry]:
        """The page as the table will hold it once this invocation's changes are written:
        changed entries replace their stored version, new ones join in name order. A full page
        ends at its last name (the table may hold more between there and a new name of ours);
        a short one means the partition has nothing more, so all our later names belong."""
        mine = self._dirty_names.get(parent)
        if not mine:
            return page
        last = name_of(page[-1].path) if len(page) >= limit else None
        by_name = {name_of(e.path): e for e in page}
        for name in mine:
            if (after is None or name > after) and (last is None or name <= last):
                by_name[name] = self._cache[child_path(parent, name)]
        return [by_name[name] for name in sorted(by_name)][:limit]

    def forget(self) -> None:
        self._cache.clear()
        self._dirty.clear()
        self._dirty_names.clear()
        self._pages.clear()


@dataclass(frozen=True, slots=True)
class _StoredPage:
    """A page of a partition as the table held it. A walk that descends into a child asks for
    the parent's page again after that child, when it comes back: most often the rest of this
    one (a Query per directory instead of about two)."""

    after: str | None
    entries: list[Entry]
    complete: bool  # a short page: nothing more in the partition

    def rest(self, after: str | None, limit: int) -> list[Entry] | None:
        """The page after `after` if this one answers it, else None."""
        if after is None:
            start = 0 if self.after is None else -1
        elif self.after is None or after >= self.after:
            start = bisect_right(self.entries, after, key=lambda e: name_of(e.path))
        else:
            start = -1
        if start < 0:
            return None
        rest = self.entries[start:start + limit]
        return rest if self.complete or len(rest) == limit else None
