"""The namespace state of the covered directories, listed in parallel, as contract records.

Used after purged edits (gap_policy = "snapshot") and by `verify`. The state travels as the
contract's SNAPSHOT records (docs/contract.md, "Records the agent adds"): one per listed path,
all at txid T, the NameNode txid taken before the listing began, index 0..n-1 in path order
(a parent sorts before its children), timestamp = when the listing began. The stream resumes
after T, so no real event shares their keys, and a consumer applies the snapshot, then the
stream. A path that vanished during the gap is simply not listed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Protocol

from hdfs_events.event import EventType, HdfsEvent, INodeType
from onprem_agent.source import TxBatch


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


class NamespaceLister(Protocol):
    def status(self, path: str) -> NamespaceEntry | None: ...  # None: no such path

    def list_dir(self, path: str) -> Sequence[NamespaceEntry]: ...


def walk(lister: NamespaceLister, roots: Iterable[str], *, workers: int = 8,
         on_dir: Callable[[str, Sequence[NamespaceEntry]], None] | None = None
         ) -> list[NamespaceEntry]:
    """Every entry under `roots` (the roots included, "/" excepted), sorted by path; each
    directory is one listStatus call, run `workers` at a time."""
    entries: dict[str, NamespaceEntry] = {}
    pending: set[Future[tuple[str, Sequence[NamespaceEntry]]]] = set()

    def listing(path: str) -> tuple[str, Sequence[NamespaceEntry]]:
        return path, lister.list_dir(path)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hdfs-list") as pool:
        for root in _outermost(roots):
            status = lister.status(root)
            if status is None:
                continue
            if root != "/":
                entries[status.path] = status
            if status.inode_type is INodeType.DIRECTORY:
                pending.add(pool.submit(listing, root))
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                parent, children = future.result()
                if on_dir is not None:
                    on_dir(parent, children)
                for child in children:
                    entries[child.path] = child
                    if child.inode_type is INodeType.DIRECTORY:
                        pending.add(pool.submit(listing, child.path))
    return [entries[p] for p in sorted(entries)]


def _outermost(roots: Iterable[str]) -> list[str]:
    """Drops roots inside other roots, so nothing is listed twice."""
    out: list[str] = []
    for root in sorted({r.rstrip("/") or "/" for r in roots}):
        if not any(root == o or root.startswith(o.rstrip("/") + "/") for o in out):
            out.append(root)
    return out


def snapshot_batch(cluster: str, txid: int, entries: Iterable[NamespaceEntry], *,
                   listed_ms: int) -> TxBatch:
    """SNAPSHOT records of `entries` (in path order) at txid T, as FileStatus gives them:
    size, replication, block size and erasure coding only for files (a directory's
    FileStatus carries zeros there, not values), symlink_target only for symlinks."""
    events: list[HdfsEvent] = []
    for e in entries:
        is_file = e.inode_type is INodeType.FILE
        events.append(HdfsEvent(
            cluster, txid, len(events), EventType.SNAPSHOT, e.path, timestamp=listed_ms,
            inode_type=e.inode_type, owner=e.owner, group=e.group, perms=e.perms,
            mtime=e.mtime, atime=e.atime,
            size=e.size if is_file else None,
            replication=e.replication if is_file else None,
            block_size=e.block_size if is_file else None,
            erasure_coded=e.erasure_coded if is_file else None,
            symlink_target=e.symlink_target if e.inode_type is INodeType.SYMLINK else None))
    return TxBatch(txid=txid, events=tuple(events))


def namespace_snapshot(cluster: str, lister: NamespaceLister, roots: Sequence[str], *,
                       workers: int = 8,
                       clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000
                       ) -> Callable[[int], TxBatch]:
    """The `snapshot` function LiveSource calls with the txid taken before listing."""

    def take(txid: int) -> TxBatch:
        listed_ms = clock_ms()
        return snapshot_batch(cluster, txid, walk(lister, roots, workers=workers),
                              listed_ms=listed_ms)

    return take
