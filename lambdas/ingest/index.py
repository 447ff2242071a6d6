"""The namespace index: applies HDFS events to one entry per path (see index_model for the
merge rules, subtree for directory operations). Only paths under the configured prefixes are
indexed; a RENAME out of them counts as a delete, one into them as a create of unknown type.

After purged edits the agent sends SNAPSHOT records (hdfs_events contract): each one starts a
new incarnation of its path holding the listed state, and a listed directory also ends every
entry beneath it that predates the listing (a subtree walk, as for UNLINK, sparing the
directory itself). Its children's own SNAPSHOT records, later in the same snapshot, bring back
what still exists; what vanished during the gap stays gone. GAP records change nothing here.
"""

from __future__ import annotations

from collections.abc import Sequence

from hdfs_events.event import EventType, HdfsEvent, INodeType
from lambdas.ingest import index_model as m
from lambdas.ingest.index_effects import create_values, snapshot_values, update_values
from lambdas.ingest.index_model import At, Entry, Version
from lambdas.ingest.index_view import (
    ConcurrentUpdate,
    IndexStore,
    IndexView,
    ancestors,
    name_of,
)
from lambdas.ingest.settings import is_under
from lambdas.ingest.subtree import RENAME, SNAPSHOT, UNLINK, SubtreeOp

DEFAULT_SUBTREE_BUDGET = 500  # children per invocation: ~4 DynamoDB calls each, well in 15 min
MAX_HOPS = 64  # forwarding steps through later moves; a chain this long is a bug
MAX_ATTEMPTS = 3  # re-applications after a concurrent write before the record fails
DIRECTORY = str(INodeType.DIRECTORY)
AFTER_ALL: Version = (2**63 - 1, 0)  # after any real event: where a dead incarnation ends
# Below any real version (txids start at 1), so within the frame of one event's version: first
# the dead incarnations that event's delete left behind, then what a SNAPSHOT lists there.
DEAD: Version = (0, 0)
LISTED: Version = (0, 1)
PLACEHOLDER: Version = (0, 0)  # the version of a parent's inferred type: any real event wins


class NamespaceIndex:
    def __init__(self, store: IndexStore, prefixes: Sequence[str], *,
                 subtree_budget: int = DEFAULT_SUBTREE_BUDGET) -> None:
        self.store, self.prefixes = store, tuple(prefixes)
        self.subtree_budget = subtree_budget
        self.reads = self.writes = 0

    def indexed(self, path: str) -> bool:
        return is_under(path, self.prefixes)

    def relevant(self, event: HdfsEvent) -> bool:
        """Whether the event changes the index: it touches an indexed path (a GAP does not)."""
        return event.type != EventType.GAP and (self.indexed(event.path) or (
            event.dst_path is not None and self.indexed(event.dst_path)))

    def apply(self, events: Sequence[HdfsEvent]) -> list[SubtreeOp]:
        """Applies the events in order without waiting for walks; returns the walks left
        unfinished. Application on arrival: the merge-rule tests and the benchmark's baseline
        use it; the consumer goes through the sequencer (`apply_until_walk`)."""
        relevant = [e for e in events if self.relevant(e)]
        pending: list[SubtreeOp] = []
        for cluster in dict.fromkeys(e.cluster for e in relevant):
            mine = [e for e in relevant if e.cluster == cluster]
            done = 0
            while done < len(mine):
                taken, walk = self.apply_until_walk(mine[done:])
                done += taken
                pending += [walk] if walk is not None else []
        return pending

    def apply_until_walk(self, events: Sequence[HdfsEvent]) -> tuple[int, SubtreeOp | None]:
        """Applies events of one cluster in order until one leaves a subtree walk unfinished;
        returns how many were taken (that one included) and the walk, which the caller finishes
        (`resume`) before applying anything later: in-order application (the sequencer)."""
        if not events:
            return 0, None
        view = IndexView(self.store, events[0].cluster)

        def step(v: IndexView) -> tuple[int, SubtreeOp | None]:
            v.prefetch(p for e in events for q in (e.path, e.dst_path) if q
                       for p in self._chain(q))
            for taken, event in enumerate(events, start=1):
                if self.relevant(event) and (op := self._apply_event(v, event)) is not None:
                    v.flush()
                    return taken, op
            v.flush()
            return len(events), None

        try:
            return self._with_retries(step, view)  # type: ignore[no-any-return]
        finally:
            self._count([view])

    def resume(self, op: SubtreeOp) -> SubtreeOp | None:
        view = IndexView(self.store, op.cluster)

        def step(v: IndexView) -> SubtreeOp | None:
            left = self._run(v, op)
            v.flush()
            return left

        try:
            return self._with_retries(step, view)
        finally:
            self._count([view])

    def _count(self, views) -> None:  # type: ignore[no-untyped-def]
        for view in views:
            self.reads += view.reads
            self.writes += view.writes

    @staticmethod
    def _with_retries(step, view: IndexView):  # type: ignore[no-untyped-def]
        for attempt in range(MAX_ATTEMPTS):
            try:
                return step(view)
            except ConcurrentUpdate:
                view.forget()
                if attempt == MAX_ATTEMPTS - 1:
                    raise
        return None

    # --- one event -----------------------------------------------------------------------

    def _apply_event(self, view: IndexView, event: HdfsEvent) -> SubtreeOp | None:
        version: Version = (event.txid, event.index)
        if event.type == EventType.RENAME:
            return self._rename(view, event, version)
        landed = self._land_again(view, event.path, version)
        if landed is None:
            return None
        path, at = landed
        if event.type != EventType.UNLINK:
            self._ensure_parents(view, path, at)
        if event.type == EventType.CREATE:
            entry = self._help_along(view, view.get(path), at)
            entry_new = m.set_values(m.begin(entry, at), create_values(event), version, at)
            view.save(entry, entry_new)
        elif event.type == EventType.UNLINK:
            return self._unlink(view, path, at, version)
        elif event.type == EventType.SNAPSHOT:
            return self._snapshot(view, event, path, at, version)
        else:
            values = update_values(event)
            if values:
                entry = view.get(path)
                view.save(entry, m.set_values(entry, values, version, at))
        return None

    def _unlink(self, view: IndexView, path: str, at: At,
                version: Version) -> SubtreeOp | None:
        entry = self._help_along(view, view.get(path), at)
        op = None
        if not _walk_done(entry, at) and self._is_directory(view, entry, at):
            op = SubtreeOp(kind=UNLINK, cluster=view.cluster, version=version, src=path,
                           src_at=at)
        ended = m.finish(entry, at, None)
        view.save(entry, m.with_marker(ended, op.marker()) if op else ended)
        return self._run(view, op) if op else None

    def _snapshot(self, view: IndexView, event: HdfsEvent, path: str, at: At,
                  version: Version) -> SubtreeOp | None:
        """The listing supersedes the path's past: whatever was there ends at `at` (so changes
        from before the gap, arriving late, land in a dead incarnation), and the listed state
        begins just after, at (at, LISTED)."""
        entry = self._help_along(view, view.get(path), at)
        reborn = (*at, LISTED)
        op = None
        # A redelivery after the walk finished finds the snapshot's incarnation unmarked.
        walked = entry.born == reborn and entry.subtree_op is None
        if event.inode_type == INodeType.DIRECTORY and not walked:
            op = SubtreeOp(kind=SNAPSHOT, cluster=view.cluster, version=version, src=path,
                           src_at=at)
        listed = m.set_values(m.begin(m.finish(entry, at, None), reborn),
                              snapshot_values(event), version, reborn)
        view.save(entry, m.with_marker(listed, op.marker()) if op else listed)
        return self._run(view, op) if op else None

    def _rename(self, view: IndexView, event: HdfsEvent, version: Version) -> SubtreeOp | None:
        assert event.dst_path is not None
        src = self._land_again(view, event.path, version) if self.indexed(event.path) else None
        dst = (self._land_again(view, event.dst_path, version)
               if self.indexed(event.dst_path) else None)
        carried = m.Carried()
        src_entry = None
        if src is not None:
            src_entry = self._help_along(view, view.get(src[0]), src[1])
            if src_entry.alive_at(src[1]):
                carried = m.values_as_of(src_entry, src[1])
            elif src_entry.end is not None and src_entry.end.at < src[1]:
                # An incarnation between the last end and this RENAME whose birth (a CREATE
                # or a move into the path) has not arrived: carry what reached it meanwhile.
                carried = m.values_between(src_entry, src_entry.end.at, src[1])
        op = None
        if (src is not None and src_entry is not None and not _walk_done(src_entry, src[1])
                and self._is_directory(view, src_entry, src[1])):
            op = SubtreeOp(kind=RENAME if dst else UNLINK, cluster=view.cluster,
                           version=version, src=src[0], src_at=src[1],
                           dst=dst[0] if dst else None,
                           dst_origin=event.dst_path if dst else None)
        if dst is not None:
            self._ensure_parents(view, dst[0], dst[1])
            dst_entry = self._help_along(view, view.get(dst[0]), dst[1])
            moved = m.move_in(dst_entry, dst[1], carried)
            view.save(dst_entry, m.with_marker(moved, op.marker()) if op else moved)
        if src is not None and src_entry is not None:
            src_entry = view.get(src[0])
            ended = m.finish(src_entry, src[1], event.dst_path if dst else None)
            view.save(src_entry, m.with_marker(ended, op.marker()) if op else ended)
        return self._run(view, op) if op else None

    def _is_directory(self, view: IndexView, entry: Entry, at: At) -> bool:
        """Whether the incarnation alive at `at` is a directory (a redelivered UNLINK may find
        the path re-created since, as a file)."""
        kind = m.type_at(entry, at)
        if kind is not None:
            return kind == DIRECTORY
        # Unknown to the index (created before indexing began): look for children.
        return bool(view.children(entry.path, after=None, limit=1))

    # --- where an event lands -------------------------------------------------------------

    def _chain(self, path: str) -> list[str]:
        """Indexed ancestors of `path`, top down, then the path itself."""
        return [p for p in (*ancestors(path), path) if self.indexed(p)]

    def _land(self, view: IndexView, path: str, at: At) -> tuple[str, At] | None:
        """Where a change made to `path` at `at` sits in the index now: follows the earliest
        later move of the path or an ancestor, and past a later delete into a dead incarnation
        of the path; None if a move out of the indexed prefixes took it away."""
        for _ in range(MAX_HOPS):
            if not self.indexed(path):
                return None
            chain = self._chain(path)
            view.prefetch(chain)
            best: tuple[str, m.End] | None = None
            for ancestor in reversed(chain):  # on a tie the path's own end wins
                end = view.get(ancestor).end_after(at)
                if end is not None and (best is None or end.at < best[1].at):
                    best = (ancestor, end)
            if best is None:
                return path, at
            ancestor, end = best
            birth = view.get(path).next_birth(at)
            if ancestor != path and birth is not None and birth <= end.at:
                # The path was re-created before the parent moved: the change stays with the
                # older incarnation here (its own RENAME or UNLINK will carry it).
                return path, at
            if end.moved_to is None and end.at[-1] == AFTER_ALL:
                return path, at  # already in a dead incarnation (below): it stays there
            if end.moved_to is None and ancestor == path and end.born is not None:
                # A known incarnation of the path, deleted since: it holds its state already,
                # and nothing can carry it anywhere else (a RENAME would have ended it first).
                return path, at
            if end.moved_to is None:
                # Deleted later (the path, or a parent). Not dropped: the change stays here in
                # a dead incarnation (a frame after the delete that ends after everything), so
                # a RENAME from before the delete, still to arrive, can carry it away.
                self._bury(view, path, (*end.at, DEAD, AFTER_ALL))
                at = _dead_frame(end.at, at)
                continue
            path, at = _relocate(path, ancestor, end.moved_to), _arrival(end) + at
        raise RuntimeError(f"{view.cluster}:{path}: more than {MAX_HOPS} forwarding moves")

    @staticmethod
    def _bury(view: IndexView, path: str, at: At) -> None:
        entry = view.get(path)
        view.save(entry, m.finish(entry, at, None))

    def _ensure_parents(self, view: IndexView, path: str, at: At) -> None:
        """Out-of-order arrival can put an entry under a directory the index has not heard of
        yet. A subtree walk finds children only through their parent's entry, so give the
        parent one: a directory of unknown origin, which its own CREATE or move completes.
        Not for an entry in a dead incarnation: nothing shows it, and a placeholder parent
        would be a live directory the namespace never had."""
        if DEAD in at:
            return
        for parent in self._chain(path)[:-1]:
            entry = view.get(parent)
            if entry.born is None and entry.end is None and not entry.values:
                view.save(entry, m.set_values(entry, {"type": DIRECTORY}, PLACEHOLDER, at))

    def _land_again(self, view: IndexView, path: str,
                    version: Version) -> tuple[str, At] | None:
        """Like _land, but a redelivered event that already changed this path's life (its
        birth or end carries the event's own version) stays where it was first applied, so
        its subtree walk resumes there even if a later move of a parent arrived since."""
        entry = view.get(path)
        if entry.born == (version,) or any(e.at == (version,) for e in (
                *entry.prev_ends, *([entry.end] if entry.end else []))):
            return path, (version,)
        return self._land(view, path, (version,))

    def _help_along(self, view: IndexView, entry: Entry, at: At, depth: int = 0, *,
                    before: bool = False) -> Entry:
        """Before the path changes life at `at`: if a parent's move or delete that started
        before `at` has not reached this entry yet (its walk is still in progress), apply it to
        this entry first, so the new incarnation does not overwrite data still to be moved."""
        if entry.born is None or entry.end is not None or depth > MAX_HOPS:
            return entry
        due: tuple[str, m.End] | None = None
        for ancestor in self._chain(entry.path)[:-1]:
            a = view.get(ancestor)
            for end in (*a.prev_ends, *([a.end] if a.end else [])):
                if (entry.born < end.at and (end.at < at if before else end.at <= at)
                        and (due is None or end.at < due[1].at)):
                    due = (ancestor, end)
        if due is None:
            return entry
        ancestor, end = due
        carried = m.values_as_of(entry, end.at)
        target = _relocate(entry.path, ancestor, end.moved_to) if end.moved_to else None
        view.save(entry, m.finish(entry, end.at, target))
        if target is not None:
            landed = self._land(view, target, _arrival(end))
            if landed is not None:
                dst = self._help_along(view, view.get(landed[0]), landed[1], depth + 1)
                view.save(dst, m.move_in(dst, landed[1], carried))
        return view.get(entry.path)

    # --- subtree walk ---------------------------------------------------------------------

    def _run(self, view: IndexView, op: SubtreeOp) -> SubtreeOp | None:
        budget = self.subtree_budget
        stack = list(op.cursor)
        while stack:
            rel, after = stack[-1]
            parent = op.src + rel if rel else op.src
            limit = max(1, min(budget, 100))
            page = view.children(parent, after=after, limit=limit)
            descended = False
            for child in page:
                if budget <= 0:
                    return op.advanced(stack)
                budget -= 1
                descend = self._descend(view, op, child)
                self._walk_child(view, op, child)
                stack[-1] = (rel, name_of(child.path))
                if descend:
                    stack.append((child.path[len(op.src):], None))
                    descended = True
                    break
            if not descended and len(page) < limit:
                stack.pop()  # a short page: the partition has nothing more
            elif budget <= 0:
                return op.advanced(stack)
        self._clear_markers(view, op)
        return None

    def _walk_child(self, view: IndexView, op: SubtreeOp, child: Entry) -> None:
        # A parent's earlier move or delete whose own walk has not reached this child yet
        # (the path was re-created since, and this walk overtook that one): apply it first.
        child = self._help_along(view, child, op.src_at, before=True)
        src_at = _child_frame(child, op)
        if src_at is None:
            return
        if op.kind == RENAME and op.dst is not None:
            rel = child.path[len(op.src):]
            # Land from the RENAME's own destination at its version, not from where dst was
            # forwarded: the child's path may have ended in between (deleted, moved away).
            target = (op.dst_origin or op.dst) + rel
            landed = self._land(view, target, (op.version,))
            carried = m.values_as_of(child, src_at)
            child = view.save(child, m.finish(child, src_at, target))
            if child.born is None and not carried.values:
                # Only an end is known here (a RENAME or UNLINK of the path arrived before its
                # birth): there is no state to carry, and a move would invent a live entry.
                return
            if landed is not None:
                self._ensure_parents(view, landed[0], landed[1])
                dst = self._help_along(view, view.get(landed[0]), landed[1])
                view.save(dst, m.move_in(dst, landed[1], carried))
            return
        view.save(child, m.finish(child, src_at, None))

    def _descend(self, view: IndexView, op: SubtreeOp, child: Entry) -> bool:
        """Into directories this op moves (or moved: a restarted walk), not into ones that
        ended before it: their own walk covers them, and re-created paths (a job's
        `_temporary`) would otherwise make every walk visit all their past lives."""
        if _child_frame(child, op) is not None or (child.end is not None
                                                   and child.end.at == op.src_at):
            if child.type == DIRECTORY:
                return True
            if child.type is None:  # moved in before its CREATE arrived: has it children?
                return bool(view.children(child.path, after=None, limit=1))
        # Moved ahead of the walk ("help along") and perhaps re-created since: its old
        # children are still in the partition.
        return any(e.type == DIRECTORY and e.at == op.src_at for e in child.prev_ends)

    def _clear_markers(self, view: IndexView, op: SubtreeOp) -> None:
        # dst first: a source root ended without a marker means the whole op is done.
        for path in (op.dst, op.src):
            if path is None:
                continue
            entry = view.get(path)
            if entry.subtree_op == op.marker():
                view.save(entry, m.with_marker(entry, None))


def _dead_frame(end_at: At, at: At) -> At:
    """Where a change at `at` goes when its path was deleted at `end_at` after it: just after
    the delete, (*end_at, DEAD, ...), and in its own order there. A change already in the
    delete's frame (a move or a delete forwarded there) keeps only what follows the shared
    part, so a delete inside a deleted directory nests instead of starting over."""
    shared = 0
    while shared < len(end_at) - 1 and shared < len(at) and at[shared] == end_at[shared]:
        shared += 1
    return (*end_at, DEAD, *at[shared:])


def _child_frame(child: Entry, op: SubtreeOp) -> At | None:
    """When the op takes `child`, if it was alive then. An op on a directory deleted after it
    (a RENAME arriving after the parent's UNLINK) runs in the dead incarnation's frame, but a
    child whose own events came before that delete is in the plain one: the delete's walk
    ended it, at a version after this op's, so at the op's own version it was still there."""
    if child.alive_at(op.src_at):
        return op.src_at
    plain: At = (op.version,)
    if DEAD in op.src_at and child.alive_at(plain):
        return plain
    return None


def _walk_done(root: Entry, at: At) -> bool:
    """The root already ended at `at` and carries no marker: its walk finished before (this is
    a redelivery), or a parent's walk ended it and covers its children."""
    return root.end is not None and root.end.at == at and root.subtree_op is None


def _arrival(end: m.End) -> At:
    """When what an end moved away reaches its destination: at the moving event's own version
    (the last element of the end's `at`), in the destination's own history."""
    return (end.at[-1],)


def _relocate(path: str, ancestor: str, moved_to: str) -> str:
    if path == ancestor:
        return moved_to
    rest = path[len(ancestor):] if ancestor != "/" else path
    return moved_to.rstrip("/") + rest if moved_to != "/" else rest
