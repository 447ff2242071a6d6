"""The namespace state of the covered directories, listed page by page, as contract records.

Used on first start, after purged edits (gap_policy = "snapshot") and by `verify`. The state
travels as the contract's SNAPSHOT records (docs/contract.md, "Records the agent adds"): one
per listed path, all at txid T, the NameNode txid taken before the listing began, index
0..n-1 in walk order, timestamp = when the listing began. The stream resumes after T, so no
real event shares their keys, and a consumer applies the snapshot, then the stream. A path
that vanished during the gap is simply not listed.

Bounded memory at any namespace size: the walk is a pre-order depth-first walk (a directory
before its children, each directory's children in the NameNode's own order, the signed byte
order of their names: DFSUtilClient.compareBytes), and each directory is read one page at a
time (DFSClient.listPaths after the last name read; a page is dfs.ls.limit entries, 1000 by
default). What it holds is a page per level of depth plus the pages read ahead, never a whole
directory or namespace; the records leave as TxBatch pieces of `PIECE_EVENTS` while the walk
goes on, so a million-file directory flows through the pipeline like any stream.

The order is a function of the namespace only: listed twice at the same txid (nothing changed
in between), the same path gets the same index, so a snapshot re-sent after a crash at an
unchanged txid repeats its keys exactly (see LiveSource._list_namespace for the restart rule).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol, TypeVar

from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events.snapshot_index import outermost
from onprem_agent.source import TxBatch

# Records per TxBatch piece: about a listing page, so a piece is cheap to hold and the pipeline
# starts packing while the walk goes on.
PIECE_EVENTS = 1000
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class NamespaceEntry:
    """One FileStatus, as Hadoop's FileSystem.listStatus returns it."""

    path: str
    inode_type: INodeType
    size: int = 0
    mtime: int = 0
    atime: int = 0
    owner: str = ""
    group: str = ""
    perms: str = "0000"
    replication: int = 0
    block_size: int = 0
    symlink_target: str | None = None
    erasure_coded: bool | None = None
    # In an HDFS encryption zone: the DataNodes hold ciphertext (onprem_agent.sync.encryption).
    encrypted: bool | None = None
    # A directory's number of children (HdfsFileStatus.getChildrenNum): the walk gives a
    # directory's children in pages interleaved with their subtrees, so a consumer learns how
    # crowded it is only from this count.
    children_num: int | None = None

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class ListingPage:
    """Children of one directory, in the NameNode's order; `more`: the next page starts after
    the last of them."""

    entries: Sequence[NamespaceEntry]
    more: bool = False


class NamespaceLister(Protocol):
    def status(self, path: str) -> NamespaceEntry | None: ...  # None: no such path

    def list_page(self, path: str, after: str | None) -> ListingPage:
        """One page of the children of `path` after the child named `after` (None: from the
        first). A directory that is gone: an empty last page."""
        ...


Call = Callable[[Callable[[], _T]], _T]  # how each NameNode call is made (LiveSource retries)


def _direct(action: Callable[[], _T]) -> _T:
    return action()


class _Listing:
    """One directory being walked: the page in hand and where the next one starts."""

    __slots__ = ("dirs_ahead", "entries", "more", "path", "pos")

    def __init__(self, path: str) -> None:
        self.path = path
        self.entries: Sequence[NamespaceEntry] = ()
        self.pos = 0
        self.more = True
        self.dirs_ahead = 0  # entries of the page in hand looked at for read-ahead


class _ReadAhead:
    """Pages fetched by `workers` threads before the walk needs them: the next page of each
    directory on the walk's stack, and the first pages of the directories the walk is about to
    enter, at most `limit` pages at a time."""

    def __init__(self, lister: NamespaceLister, call: Call, pool: ThreadPoolExecutor | None,
                 limit: int) -> None:
        self._lister, self._call, self._pool, self._limit = lister, call, pool, limit
        self._pending: dict[tuple[str, str | None], Future[ListingPage]] = {}

    def prefetch(self, path: str, after: str | None) -> bool:
        if self._pool is None or len(self._pending) >= self._limit:
            return False
        key = (path, after)
        if key not in self._pending:
            self._pending[key] = self._pool.submit(self._lister.list_page, path, after)
        return True

    def page(self, path: str, after: str | None) -> ListingPage:
        future = self._pending.pop((path, after), None)
        if future is not None:
            try:
                return future.result()
            except Exception:  # read again below, where it is retried or raised
                # A read-ahead runs on a worker thread, outside `call`: the outage logic (one
                # wait, one log line per attempt) stays on the walk's own thread.
                pass
        return self._call(lambda: self._lister.list_page(path, after))

    def cancel(self) -> None:
        for future in self._pending.values():
            future.cancel()
        self._pending.clear()


def walk(lister: NamespaceLister, roots: Iterable[str], *, workers: int = 8,
         call: Call = _direct) -> Iterator[NamespaceEntry]:
    """Every entry under `roots` (the roots included, "/" excepted), a directory before its
    children, each directory's children in the NameNode's order, read a page at a time with up
    to `workers` pages read ahead. `call` makes each NameNode call (LiveSource passes its
    retry, so an outage mid-walk resumes at the page it was reading)."""
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hdfs-list") \
        if workers > 1 else None
    ahead = _ReadAhead(lister, call, pool, limit=2 * workers)
    try:
        for root in outermost(roots):
            status = call(lambda root=root: lister.status(root))  # type: ignore[misc]
            if status is None:
                continue
            if root != "/":
                yield status
            if status.inode_type is INodeType.DIRECTORY:
                yield from _subtree(root, ahead)
    finally:
        ahead.cancel()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _subtree(root: str, ahead: _ReadAhead) -> Iterator[NamespaceEntry]:
    stack = [_Listing(root)]
    while stack:
        top = stack[-1]
        if top.pos == len(top.entries):
            if not top.more:
                stack.pop()
                continue
            after = top.entries[-1].name if top.entries else None
            page = ahead.page(top.path, after)
            # An empty page ends the directory whatever it says: there is no name to go on after.
            top.entries, top.pos, top.dirs_ahead = page.entries, 0, 0
            top.more = page.more and bool(page.entries)
            if top.more and top.entries:
                ahead.prefetch(top.path, top.entries[-1].name)
            _read_ahead(stack, ahead)
            continue
        entry = top.entries[top.pos]
        top.pos += 1
        yield entry
        if entry.inode_type is INodeType.DIRECTORY:
            stack.append(_Listing(entry.path))
            _read_ahead(stack, ahead)


def _read_ahead(stack: list[_Listing], ahead: _ReadAhead) -> None:
    """First pages of the directories next in walk order: those of the deepest page first."""
    for listing in reversed(stack):
        entries = listing.entries
        start = max(listing.dirs_ahead, listing.pos)
        for i in range(start, len(entries)):
            entry = entries[i]
            if entry.inode_type is INodeType.DIRECTORY and not ahead.prefetch(entry.path, None):
                listing.dirs_ahead = i
                return
        listing.dirs_ahead = len(entries)


def snapshot_record(cluster: str, txid: int, index: int, e: NamespaceEntry, *,
                    listed_ms: int) -> HdfsEvent:
    """The SNAPSHOT record of one entry, as FileStatus gives it: size, replication, block size
    and erasure coding only for files (a directory's FileStatus carries zeros there, not
    values), symlink_target only for symlinks, the number of children only for directories."""
    is_file = e.inode_type is INodeType.FILE
    return HdfsEvent(
        cluster, txid, index, EventType.SNAPSHOT, e.path, timestamp=listed_ms,
        inode_type=e.inode_type, owner=e.owner, group=e.group, perms=e.perms,
        mtime=e.mtime, atime=e.atime,
        size=e.size if is_file else None,
        replication=e.replication if is_file else None,
        block_size=e.block_size if is_file else None,
        erasure_coded=e.erasure_coded if is_file else None,
        symlink_target=e.symlink_target if e.inode_type is INodeType.SYMLINK else None,
        children_num=e.children_num if e.inode_type is INodeType.DIRECTORY else None)


def snapshot_pieces(cluster: str, txid: int, entries: Iterable[NamespaceEntry], *,
                    listed_ms: int, piece_events: int = PIECE_EVENTS) -> Iterator[TxBatch]:
    """SNAPSHOT records of `entries` (in walk order) at txid T, index 0..n-1, as TxBatch pieces
    of up to `piece_events`: every piece but the last says `more`. No entries: one empty piece
    (T still advances the checkpoint)."""
    piece: list[HdfsEvent] = []
    for index, entry in enumerate(entries):
        if len(piece) == piece_events:
            yield TxBatch(txid=txid, events=tuple(piece), more=True)
            piece = []
        piece.append(snapshot_record(cluster, txid, index, entry, listed_ms=listed_ms))
    yield TxBatch(txid=txid, events=tuple(piece))


Snapshot = Callable[[int, Call], Iterator[TxBatch]]  # (T, how to call the NameNode) -> pieces


def namespace_snapshot(cluster: str, lister: NamespaceLister, roots: Sequence[str], *,
                       workers: int = 8, piece_events: int = PIECE_EVENTS,
                       clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000
                       ) -> Snapshot:
    """The `snapshot` function LiveSource calls with the txid taken before listing."""

    def take(txid: int, call: Call = _direct) -> Iterator[TxBatch]:
        listed_ms = clock_ms()
        return snapshot_pieces(cluster, txid, walk(lister, roots, workers=workers, call=call),
                               listed_ms=listed_ms, piece_events=piece_events)

    return take
