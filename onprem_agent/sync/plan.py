"""What a window of events asks of the S3 copy: pure functions, no I/O (see docs/sync.md).

A window is the events of consecutive txids. Every step the sync takes makes one S3 key equal to
what HDFS holds *now* at that path (not at the event's txid): a later change has a later txid and
comes in a later window, so the copy converges however far behind it runs. The planner's job is
to do that with the fewest bytes moved:

- FileDiff chains are merged per path before acting: CREATE + CLOSE + RENAME of a temporary file
  is one copy to the final key; a delete cancels the pending copy; APPEND waits for its CLOSE;
  TRUNCATE re-copies; METADATA updates the object's metadata without moving data.
- A CLOSE of a file the window did not create, truncate or rename onto is marked an append:
  the file was opened by an APPEND (in this window or an earlier one: a CREATE there deleted
  the key), so its object may still hold the file's first bytes and only the new ones need to
  cross (replica.py proves it by CRC32C). A pending copy is not (it may follow a TRUNCATE).
- Renames are kept as a path function, origin (the path at the window's start, where the S3 key
  is) -> current path, composed in event order. A directory's children are unknown to a pure
  planner, so the executor lists the S3 keys under each touched origin ("what was already
  copied") and `resolve` maps them forward: moved keys become server-side copies + deletes.
- A file is "dirty" (copied from HDFS) after CLOSE or TRUNCATE; CREATE alone never copies: a file
  open for write is not copied until its CLOSE. CREATE replaces the inode: the key's old object
  goes unless new content lands on it.
- A rename from outside the sync's roots brings a tree the S3 copy has never seen: that root is
  "relisted" (walked in HDFS and reconciled, as on first start). So is a rename from an ignored
  name (`x._COPYING_` -> `x`) unless the window created it: then its CLOSE is in the window.
- A step that finds no closed file at its HDFS path (renamed or deleted after the window, or
  replaced by a file still open for write or a directory) is carried into the next window as
  pending: that window's rename moves it to the new path, its delete or CREATE drops it, a
  CLOSE copies it. Without that, a file closed and then renamed across two windows would never
  be copied, nor one renamed away and replaced by a new open file before its copy ran.
- A listing (first start, after a GAP) is not atomic: it lists one directory at a time while
  clients go on, so a file renamed from a directory not yet listed into one already listed is
  in neither listing, and its RENAME (after the listing's txid T) moves no object. Every rename
  up to the txid the NameNode had reached when the listing ended (`listed_through`) is
  therefore treated as one from outside: its destination is relisted. A relist is a listing
  too, walked after the window's last event and maybe after later ones: a rename out of a
  root the window relists relists its destination, and the executor moves `listed_through` to
  the txid its relists ended at. An event up to `listed_through` also examines the key at its
  own path (the listing may have copied a file created after T there).
- Ignore patterns match anywhere in a path (onprem_agent.filters), so a directory renamed to an
  ignored name can still hold covered files: events are tracked for every path under the roots,
  and the patterns apply when steps are resolved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from hdfs_events.event import EventType, HdfsEvent, INodeType
from onprem_agent.filters import PathFilter


@dataclass(frozen=True, slots=True)
class Scope:
    """The paths the sync replicates: under `roots`, matching no ignore pattern."""

    within: PathFilter  # under the roots, patterns aside
    covered: PathFilter  # what is replicated

    @classmethod
    def of(cls, roots: Iterable[str], ignore_patterns: Iterable[str] = ()) -> Scope:
        roots = tuple(roots)
        return cls(PathFilter(roots), PathFilter(roots, tuple(ignore_patterns)))


def under(path: str, root: str) -> bool:
    """`path` is `root` or inside it (component boundaries: /a/b is not under /a/bc)."""
    return path == root or root == "/" or path.startswith(root + "/")


def rebase(path: str, src: str, dst: str) -> str:
    return dst + path[len(src):]


@dataclass(frozen=True, slots=True)
class Move:
    """A rename: what was under `src` is now under `dst`; what was under `dst` is gone."""

    src: str
    dst: str


@dataclass(frozen=True, slots=True)
class Kill:
    """What was at `path` (and under it) is gone: deleted, moved out of cover, or replaced by
    a new inode (CREATE)."""

    path: str


PathOp = Move | Kill


def forward(origin: str, ops: Sequence[PathOp]) -> str | None:
    """Where the thing at `origin` (window start) is after `ops`; None when it is gone."""
    path = origin
    for op in ops:
        if isinstance(op, Kill):
            if under(path, op.path):
                return None
        elif under(path, op.dst):
            return None  # overwritten by the rename
        elif under(path, op.src):
            path = rebase(path, op.src, op.dst)
    return path


def backward(path: str, ops: Sequence[PathOp]) -> str | None:
    """The origin of what is at `path` after `ops`; None when it was made inside the window."""
    for op in reversed(ops):
        if isinstance(op, Kill):
            if under(path, op.path):
                return None
        elif under(path, op.dst):
            path = rebase(path, op.dst, op.src)
    return path


@dataclass(frozen=True, slots=True)
class WindowPlan:
    """The merged effect of a window of events on the covered namespace."""

    ops: tuple[PathOp, ...] = ()
    touched: frozenset[str] = frozenset()  # origins whose S3 keys (and keys under) to examine
    dirty: frozenset[str] = frozenset()  # current paths: copy from HDFS
    meta: frozenset[str] = frozenset()  # current paths: metadata changed
    relist: frozenset[str] = frozenset()  # current roots: walk HDFS and reconcile
    appended: frozenset[str] = frozenset()  # current paths: closed, not rewritten in the window
    scope: Scope | None = None
    first_txid: int | None = None
    last_txid: int | None = None
    events: int = 0

    @property
    def empty(self) -> bool:
        return not (self.touched or self.dirty or self.meta or self.relist)


@dataclass(slots=True)
class _Builder:
    scope: Scope
    ops: list[PathOp] = field(default_factory=list)
    fresh: set[str] = field(default_factory=set)  # files created in the window (current paths)
    touched: set[str] = field(default_factory=set)
    dirty: set[str] = field(default_factory=set)
    meta: set[str] = field(default_factory=set)
    relist: set[str] = field(default_factory=set)
    appended: set[str] = field(default_factory=set)
    # Paths whose object may hold no prefix of their file (a TRUNCATE, a rename onto them,
    # a pending copy)
    reshaped: set[str] = field(default_factory=set)
    listed_through: int | None = None  # renames up to here may have crossed a listing

    def touch(self, path: str) -> None:
        origin = backward(path, self.ops)
        if origin is not None:
            self.touched.add(origin)

    def drop(self, path: str) -> None:
        """Pending work at or under `path` is cancelled: the thing there is gone."""
        for pending in (self.dirty, self.meta, self.relist, self.fresh, self.appended):
            pending.difference_update([p for p in pending if under(p, path)])

    def kill(self, path: str, *, touch: bool = True) -> None:
        if touch:
            self.touch(path)
        self.drop(path)
        self.ops.append(Kill(path))

    def move(self, src: str, dst: str) -> None:
        self.touch(src)
        self.touch(dst)
        self.drop(dst)
        # A moved file's object moves in the server-copy phase only when no copy targets it.
        self.appended.difference_update([p for p in self.appended if under(p, src)])
        self.reshaped.add(dst)
        for pending in (self.dirty, self.meta, self.relist, self.fresh):
            moved = [p for p in pending if under(p, src)]
            pending.difference_update(moved)
            pending.update(rebase(p, src, dst) for p in moved)
        self.ops.append(Move(src, dst))

    def add(self, e: HdfsEvent) -> None:
        within = self.scope.within.passes
        t = e.type
        crossed = self.listed_through is not None and e.txid <= self.listed_through
        if crossed:
            # The listing may have copied what this event made, under the path it made it at:
            # that key is no window-start origin (a file created in the window, or in a
            # directory created in it, has none), so it is examined as it stands.
            self.touched.update(p for p in (e.path, e.dst_path) if p is not None and within(p))
        if t is EventType.RENAME:
            assert e.dst_path is not None
            src, dst = e.path, e.dst_path
            src_in, dst_in = within(src), within(dst)
            if src_in and dst_in:
                # A tree the window relists is walked after the window's last event: what a
                # rename took out of it is in neither the walk nor a key at its origin.
                relisted = any(under(src, r) for r in self.relist)
                known = src in self.fresh or (self.scope.covered.passes(src) and not crossed
                                              and not relisted)
                self.move(src, dst)
                if not known:
                    self.relist.add(dst)
            elif src_in:
                self.kill(src)
            elif dst_in:
                self.kill(dst)
                self.relist.add(dst)
            return
        if not within(e.path):
            return
        if t is EventType.CREATE:
            # Without overwrite nothing was there, so there is no key to look at (but for a
            # listing's: above); a symlink has no S3 form and a new directory is empty.
            self.kill(e.path, touch=e.overwrite is not False)
            if e.inode_type is INodeType.FILE:
                self.fresh.add(e.path)
        elif t in (EventType.CLOSE, EventType.TRUNCATE):
            self.dirty.add(e.path)
            if t is EventType.TRUNCATE:
                self.appended.discard(e.path)
                self.reshaped.add(e.path)
            elif e.path not in self.fresh and not any(under(e.path, r) for r in self.reshaped):
                self.appended.add(e.path)
        elif t is EventType.METADATA:
            self.meta.add(e.path)
        elif t is EventType.UNLINK:
            self.kill(e.path)
        # APPEND: the file is open again; its CLOSE (in this window or a later one) copies it.


def plan_window(events: Iterable[HdfsEvent], scope: Scope, *,
                pending_copies: Iterable[str] = (),
                pending_relists: Iterable[str] = (),
                listed_through: int | None = None) -> WindowPlan:
    """Merges a window's events (in txid order; no SNAPSHOT or GAP) into one WindowPlan.

    `pending_*`: the paths of earlier steps that found no closed file at their HDFS path
    (see above). `listed_through`: the NameNode's txid when the last listing ended; the
    renames up to it relist their destination (see above)."""
    b = _Builder(scope, listed_through=listed_through)
    b.dirty.update(pending_copies)
    b.reshaped.update(pending_copies)
    b.relist.update(pending_relists)
    first = last = None
    count = 0
    for e in events:
        if e.type in (EventType.GAP, EventType.SNAPSHOT):
            raise ValueError(f"{e.type} at txid {e.txid} is not a window event: a listing "
                             "is reconciled, not planned")
        first = e.txid if first is None else first
        last = e.txid
        count += 1
        b.add(e)
    return WindowPlan(ops=tuple(b.ops), touched=frozenset(b.touched), dirty=frozenset(b.dirty),
                      meta=frozenset(b.meta), relist=frozenset(b.relist),
                      appended=frozenset(b.appended), scope=scope,
                      first_txid=first,
                      last_txid=last, events=count)


@dataclass(frozen=True, slots=True)
class Steps:
    """What the executor does, phase by phase, in this order. Within a phase every step is on
    its own key, so steps run in parallel without two ever racing on one key; a key is
    written by at most one phase's step (relists last: they reconcile against what the earlier
    phases left)."""

    server_copies: tuple[tuple[str, str], ...] = ()  # (from path, to path) inside S3
    copies: tuple[str, ...] = ()  # paths read from HDFS
    deletes: tuple[str, ...] = ()
    relists: tuple[str, ...] = ()
    metadata: tuple[str, ...] = ()
    appends: tuple[str, ...] = ()  # the copies whose object may hold their bytes before an APPEND

    @property
    def count(self) -> int:
        return (len(self.server_copies) + len(self.copies) + len(self.deletes)
                + len(self.relists) + len(self.metadata))


def resolve(plan: WindowPlan, existing: Iterable[str]) -> Steps:
    """The steps of `plan`, given the paths of the S3 keys under its touched origins.

    A key whose path is read as the source of a server-side copy is never the target of one
    (a swap a -> t, b -> a, t -> b would read a key already overwritten): such a target is
    copied from HDFS instead.
    """
    assert plan.scope is not None
    covered = plan.scope.covered.passes

    def moved_to(q: str) -> str | None:
        r = forward(q, plan.ops)
        return r if r is not None and covered(r) else None

    moved = {q: moved_to(q) for q in existing}
    relisted = tuple(sorted(plan.relist))

    def relisted_path(p: str) -> bool:
        return any(under(p, r) for r in relisted)

    leaving = {q for q, r in moved.items() if r != q}
    copies = {p for p in plan.dirty if covered(p) and not relisted_path(p)}
    server: list[tuple[str, str]] = []
    for q in sorted(moved):
        r = moved[q]
        if r is None or r == q or r in copies or relisted_path(r):
            continue
        if r in leaving:
            copies.add(r)
        else:
            server.append((q, r))
    live = copies | {r for _, r in server}
    stale = [q for q in leaving if q not in live and not relisted_path(q)]
    # A key a rename replaced is not simply deleted: HDFS holds the renamed thing there now,
    # and when its source had no key (never copied, or a listing taken after the rename
    # already copied it here: first start and after a GAP), that key is the only copy. The
    # rename's destination is relisted (reconciled against HDFS) instead.
    replaced = {q: d for q in stale
                if (d := replaced_by_rename(q, plan.ops)) is not None and covered(d)}
    relisted = tuple(sorted({*relisted, *replaced.values()}))
    deletes = sorted(q for q in stale if q not in replaced)
    metadata = sorted(p for p in plan.meta
                      if covered(p) and p not in live and not relisted_path(p))
    return Steps(server_copies=tuple(server), copies=tuple(sorted(copies)),
                 deletes=tuple(deletes), relists=relisted, metadata=tuple(metadata),
                 appends=tuple(sorted(p for p in copies if p in plan.appended)))


def replaced_by_rename(origin: str, ops: Sequence[PathOp]) -> str | None:
    """The destination of the rename that last put something over `origin` (window start),
    when nothing after it killed or moved that away; None otherwise."""
    into: str | None = None
    for op in ops:
        if isinstance(op, Kill):
            if under(origin, op.path):
                into = None
        elif under(origin, op.dst):
            into = op.dst
        elif under(origin, op.src):
            into = None
    return into


# -- listings: first start, after a GAP, a relisted root, `sync verify` ---------------------------

@dataclass(frozen=True, slots=True)
class FileState:
    """What the sync compares between an HDFS file and its S3 object (S3 side: the object's
    metadata as the sync wrote it)."""

    size: int
    mtime: int
    owner: str = ""
    group: str = ""
    perms: str = ""
    replication: int = 0


@dataclass(frozen=True, slots=True)
class Drift:
    missing: tuple[str, ...] = ()  # in HDFS, not in S3: copy
    stale: tuple[str, ...] = ()  # size or mtime differ: copy
    metadata: tuple[str, ...] = ()  # only owner, group, permissions or replication differ
    extra: tuple[str, ...] = ()  # in S3, not in HDFS: delete

    @property
    def count(self) -> int:
        return len(self.missing) + len(self.stale) + len(self.metadata) + len(self.extra)

    def steps(self) -> Steps:
        return Steps(copies=tuple(sorted((*self.missing, *self.stale))),
                     deletes=self.extra, metadata=self.metadata)


def reconcile(hdfs: Mapping[str, FileState], s3: Mapping[str, FileState]) -> Drift:
    """HDFS's files (one listing) against the S3 objects under the same roots."""
    missing, stale, metadata = [], [], []
    for path in sorted(hdfs):
        want, have = hdfs[path], s3.get(path)
        if have is None:
            missing.append(path)
        elif (have.size, have.mtime) != (want.size, want.mtime):
            stale.append(path)
        elif have != want:
            metadata.append(path)
    extra = sorted(p for p in s3 if p not in hdfs)
    return Drift(missing=tuple(missing), stale=tuple(stale), metadata=tuple(metadata),
                 extra=tuple(extra))


def listed_files(entries: Iterable[HdfsEvent], scope: Scope) -> dict[str, FileState]:
    """The covered files of a SNAPSHOT batch as FileState (directories and symlinks have no
    S3 object)."""
    out = {}
    for e in entries:
        if e.inode_type is INodeType.FILE and scope.covered.passes(e.path):
            out[e.path] = FileState(size=e.size or 0, mtime=e.mtime or 0, owner=e.owner or "",
                                    group=e.group or "", perms=e.perms or "",
                                    replication=e.replication or 0)
    return out


def bytes_to_copy(events: Iterable[HdfsEvent], scope: Scope) -> int:
    """The sync's lag in bytes, known before any HDFS call: the sizes the events' CLOSE and
    TRUNCATE report, the last one per path under the roots (a temporary name counts too: its
    bytes are copied under the final one). A concat's CLOSE reports -1 and counts 0; a file
    deleted before its copy counts until the window ends."""
    sizes: dict[str, int] = {}
    for e in events:
        if e.type in (EventType.CLOSE, EventType.TRUNCATE) and scope.within.passes(e.path):
            sizes[e.path] = max(e.size or 0, 0)
    return sum(sizes.values())
