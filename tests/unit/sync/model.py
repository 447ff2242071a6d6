"""A plain-dict HDFS that emits the inotify events Hadoop would, and a plain-dict S3 the sync's
steps act on with the executor's rules (onprem_agent/sync/replicator.py), for the planner's
property tests. A double of both sides, named as one: the real pair runs in
tests/integration/hdfs/test_sync.py."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import count

from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType
from onprem_agent.sync.plan import (
    FileState,
    Scope,
    Steps,
    WindowPlan,
    plan_window,
    reconcile,
    resolve,
    under,
)


@dataclass(frozen=True)
class File:
    content: int  # a version id: equal ids, equal bytes
    size: int
    mtime: int
    perms: str = "0644"
    open: bool = False

    def state(self) -> FileState:
        return FileState(size=self.size, mtime=self.mtime, perms=self.perms)


@dataclass
class ModelHdfs:
    files: dict[str, File] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=lambda: {"/"})
    events: list[HdfsEvent] = field(default_factory=list)
    _txid: count = field(default_factory=lambda: count(1))
    _version: count = field(default_factory=lambda: count(1))
    _clock: count = field(default_factory=lambda: count(1000))

    def _emit(self, type_: EventType, path: str, **kw: object) -> None:
        self.events.append(HdfsEvent("m", next(self._txid), 0, type_, path, **kw))

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs

    def _parent(self, path: str) -> str:
        return path.rsplit("/", 1)[0] or "/"

    def mkdirs(self, path: str) -> None:
        if path in self.dirs:
            return
        self.mkdirs(self._parent(path))
        self.dirs.add(path)
        self._emit(EventType.CREATE, path, inode_type=INodeType.DIRECTORY, overwrite=False)

    # -- FileSystem calls; an invalid one is a no-op, as a failed call logs nothing ------------
    def create(self, path: str, overwrite: bool, close: bool = True) -> None:
        if path in self.dirs or (path in self.files and not overwrite) or any(
                under(path, f) and path != f for f in self.files):
            return
        if path in self.files and self.files[path].open:
            return
        self.mkdirs(self._parent(path))
        self.files[path] = File(next(self._version), 0, next(self._clock), open=True)
        self._emit(EventType.CREATE, path, inode_type=INodeType.FILE, overwrite=overwrite)
        self.files[path] = replace(self.files[path], content=next(self._version), size=3)
        if close:
            self.close(path)

    def close(self, path: str) -> None:
        f = self.files.get(path)
        if f is None or not f.open:
            return
        self.files[path] = replace(f, open=False, mtime=next(self._clock))
        self._emit(EventType.CLOSE, path, size=f.size)

    def append(self, path: str, close: bool = True) -> None:
        f = self.files.get(path)
        if f is None or f.open:
            return
        self.files[path] = replace(f, open=True, content=next(self._version), size=f.size + 2)
        self._emit(EventType.APPEND, path)
        if close:
            self.close(path)

    def truncate(self, path: str) -> None:
        f = self.files.get(path)
        if f is None or f.open or f.size == 0:
            return
        self.files[path] = replace(f, content=next(self._version), size=f.size - 1,
                                   mtime=next(self._clock))
        self._emit(EventType.TRUNCATE, path, size=f.size - 1)

    def rename(self, src: str, dst: str, overwrite: bool = False) -> None:
        if src == "/" or not self.exists(src) or under(dst, src) or self._parent(dst) not in self.dirs:
            return
        if self.exists(dst):
            if not (overwrite and dst in self.files and src in self.files
                    and not self.files[dst].open):
                return
            del self.files[dst]
        self.files = {(dst + p[len(src):] if under(p, src) else p): f
                      for p, f in self.files.items()}
        self.dirs = {(dst + d[len(src):] if under(d, src) else d) for d in self.dirs}
        self._emit(EventType.RENAME, src, dst_path=dst)

    def delete(self, path: str) -> None:
        if path == "/" or not self.exists(path):
            return
        self.files = {p: f for p, f in self.files.items() if not under(p, path)}
        self.dirs = {d for d in self.dirs if not under(d, path)}
        self._emit(EventType.UNLINK, path)

    def chmod(self, path: str, perms: str) -> None:
        if path in self.files:
            self.files[path] = replace(self.files[path], perms=perms)
        elif path not in self.dirs:
            return
        self._emit(EventType.METADATA, path, metadata_type=MetadataType.PERMS, perms=perms)

    def touch(self, path: str) -> None:
        if path not in self.files:
            return
        mtime = next(self._clock)
        self.files[path] = replace(self.files[path], mtime=mtime)
        self._emit(EventType.METADATA, path, metadata_type=MetadataType.TIMES, mtime=mtime)

    def close_all(self) -> None:
        for path in sorted(p for p, f in self.files.items() if f.open):
            self.close(path)

    def closed_files(self, covered: Scope) -> dict[str, File]:
        return {p: f for p, f in self.files.items() if not f.open and covered.covered.passes(p)}


@dataclass
class ModelS3:
    """Objects by HDFS path, with the counts a user pays for."""

    objects: dict[str, File] = field(default_factory=dict)
    uploads: int = 0
    server_copies: int = 0
    deletes: int = 0
    metadata_updates: int = 0
    gone: set[str] = field(default_factory=set)  # copies that found their path gone
    gone_roots: set[str] = field(default_factory=set)  # relists likewise
    listed_through: int | None = None  # the NameNode's txid when the last listing ended

    def keys_under(self, roots: frozenset[str]) -> set[str]:
        return {p for p in self.objects if any(under(p, r) for r in roots)}

    def apply(self, steps: Steps, hdfs: ModelHdfs, covered: Scope) -> None:
        """The executor's rules, on HDFS as it is now (possibly ahead of the window)."""
        for src, dst in steps.server_copies:
            have, want = self.objects.get(src), hdfs.files.get(dst)
            if want is None or want.open:
                self.gone.add(dst)  # as every step that finds no closed file at its path
                continue
            if have is not None and (have.size, have.mtime) == (want.size, want.mtime):
                self.objects[dst] = replace(have, perms=want.perms)
                self.server_copies += 1
            else:
                self.copy(dst, hdfs)
        for path in steps.copies:
            self.copy(path, hdfs)
        for path in steps.deletes:
            if self.objects.pop(path, None) is not None:
                self.deletes += 1
        for root in steps.relists:
            if not hdfs.exists(root):
                self.gone_roots.add(root)
                continue
            listed = {p: f.state() for p, f in hdfs.closed_files(covered).items() if under(p, root)}
            held = {p: f.state() for p, f in self.objects.items() if under(p, root)}
            self.apply(reconcile(listed, held).steps(), hdfs, covered)
        if steps.relists:
            self.listed_through = hdfs.events[-1].txid  # a relist is a listing too
        for path in steps.metadata:
            if path in hdfs.dirs:
                continue  # a directory's metadata: no object holds it
            have, want = self.objects.get(path), hdfs.files.get(path)
            if want is None or want.open:
                self.gone.add(path)
                continue
            if have is not None and have.content == want.content:
                self.objects[path] = want
                self.metadata_updates += 1
            else:
                self.copy(path, hdfs)

    def copy(self, path: str, hdfs: ModelHdfs) -> None:
        f = hdfs.files.get(path)
        if f is None or f.open:
            # Renamed or deleted since, or open for write (appended again, or another file
            # put in its place): pending for the next window.
            self.gone.add(path)
            return
        self.objects[path] = f
        self.uploads += 1

    def plan(self, events: list[HdfsEvent], scope: Scope) -> WindowPlan:
        """The next window's plan, with what the last one found gone carried into it."""
        plan = plan_window(events, scope, pending_copies=self.gone,
                           pending_relists=self.gone_roots, listed_through=self.listed_through)
        self.gone, self.gone_roots = set(), set()
        return plan

    def run_window(self, plan: WindowPlan, hdfs: ModelHdfs, covered: Scope) -> Steps:
        steps = resolve(plan, self.keys_under(plan.touched))
        self.apply(steps, hdfs, covered)
        return steps

    def apply_listing(self, listed: dict[str, FileState], hdfs: ModelHdfs,
                      covered: Scope) -> None:
        """A listing reconciled as the replicator does, once it has ended (HDFS may have moved
        on since it listed a directory, and goes on moving)."""
        self.listed_through = hdfs.events[-1].txid if hdfs.events else 0
        self.gone, self.gone_roots = set(), set()
        held = {p: f.state() for p, f in self.objects.items()}
        self.apply(reconcile(listed, held).steps(), hdfs, covered)


def list_dir(hdfs: ModelHdfs, directory: str, covered: Scope
             ) -> tuple[dict[str, FileState], list[str]]:
    """One listStatus: the covered files directly in `directory` and its subdirectories."""
    def child(p: str) -> bool:
        return p != directory and under(p, directory) and "/" not in p[len(directory) + 1:]

    files = {p: f.state() for p, f in hdfs.files.items() if child(p) and covered.covered.passes(p)}
    return files, sorted(d for d in hdfs.dirs if child(d))

