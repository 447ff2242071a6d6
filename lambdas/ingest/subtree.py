"""Directory RENAME, UNLINK and SNAPSHOT: the subtree moves or goes.

DynamoDB cannot query by key prefix, but an entry's partition is its parent directory, so a
subtree is a walk: move or end each child of a directory, go on into child directories. One
walk, two sources of children. Within a chunk the walk reads them from the chunk's view
(`walk_held`: the table's partitions listed for the chunk, level by level across all its walks
at once, plus what the chunk itself put there). A subtree larger than a chunk's listing budget
is walked from the table a few pages at a time (`walk_step`), the chunk's own changes written
first. That walk's position is a stack of (directory relative to the root, last child
done); each step reads the top `width` directories' next pages with parallel Queries, so a
wide tree costs a round trip per level, not per directory. The sequencer saves the walk (as
JSON) in its position between steps, and finishes it before applying anything later: the
events are in order, so every child the walk meets was there before the operation (or was
ended by this very operation, in a step applied before a crash: done again, the same way).
Until the walk ends, its root entries carry a marker readers report as "in progress".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from lambdas.ingest.index_model import DIRECTORY, Entry, Version

RENAME = "RENAME"
UNLINK = "UNLINK"
SNAPSHOT = "SNAPSHOT"  # a listed directory: what it held before the listing goes
CONTINUATION_VERSION = 3  # 3: in-order entries (no landing frames); a parallel cursor
Frame = tuple[str, str | None]  # (directory relative to src, last name done)


class ChildPages(Protocol):
    def children_many(self, cluster: str, parents: Sequence[Frame], *, limit: int,
                      shards: Sequence[int | None] | None = None) -> list[list[Entry]]:
        """For each (parent, after): the parent's children after `after`, by name, at most
        `limit` (fewer only at the end), from its own partition and every shard of it.
        `shards`: each parent's shard count as held (None: read from its item first)."""
        ...


@dataclass(frozen=True, slots=True)
class SubtreeOp:
    kind: str  # RENAME | UNLINK | SNAPSHOT (children end as for UNLINK; the root stays)
    cluster: str
    version: Version  # the (txid, index) of the event
    src: str
    dst: str | None = None  # where it goes (a RENAME within the indexed prefixes only)
    cursor: tuple[Frame, ...] = (("", None),)
    step: int = 0  # steps taken so far

    def marker(self) -> dict[str, Any]:
        return {"op": self.kind, "txid": self.version[0], "index": self.version[1],
                "src": self.src, "dst": self.dst}

    def to_json(self) -> str:
        return json.dumps({
            "continuation": CONTINUATION_VERSION, "kind": self.kind, "cluster": self.cluster,
            "version": list(self.version), "src": self.src, "dst": self.dst,
            "cursor": [list(frame) for frame in self.cursor], "step": self.step,
        }, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> SubtreeOp:
        """Raises ValueError naming what is wrong."""
        try:
            d = json.loads(text)
            if d.get("continuation") != CONTINUATION_VERSION:
                raise ValueError(f"unknown continuation version {d.get('continuation')!r}")
            if d["kind"] not in (RENAME, UNLINK, SNAPSHOT):
                raise ValueError(f"unknown subtree operation {d['kind']!r}")
            txid, event_index = d["version"]
            return cls(kind=d["kind"], cluster=str(d["cluster"]),
                       version=(int(txid), int(event_index)),
                       src=str(d["src"]), dst=d.get("dst"),
                       cursor=tuple((str(rel), after) for rel, after in d["cursor"]),
                       step=int(d["step"]))
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a subtree continuation: {exc!r}") from exc


class HeldChildren(Protocol):
    def children(self, directory: str) -> list[Entry] | None:
        """The directory's children as held; None when they are not (not listed yet)."""
        ...


def walk_held(held: HeldChildren, op: SubtreeOp) -> tuple[list[Entry], bool]:
    """The whole walk over held children: the entries to write, and whether every directory
    it met was held (if not, the view notes what to list, and the chunk runs again)."""
    writes: list[Entry] = []
    whole = True
    stack = [op.src]
    while stack:
        children = held.children(stack.pop())
        if children is None:
            whole = False  # go on: every directory missing at this depth is listed at once
            continue
        for child in children:
            if not child.stored or not walk_takes(op, child):
                continue  # unstored: a path the chunk creates later, absent until then
            writes += taken_by(op, child)
        for child in children:
            if child.stored and walk_descends(op, child):
                stack.append(child.path)
    return writes, whole


def walk_step(pages: ChildPages, op: SubtreeOp, *, page: int,
              width: int) -> tuple[list[Entry], SubtreeOp | None]:
    """One step: the entries to write and the walk left (None: every directory is done)."""
    frames = list(op.cursor)
    taken, left = frames[-width:], frames[:-width]
    parents = [(op.src + rel if rel else op.src, after) for rel, after in taken]
    writes: list[Entry] = []
    for (rel, _), children in zip(taken, pages.children_many(op.cluster, parents, limit=page),
                                  strict=True):
        if len(children) == page:  # a full page: the partition may hold more
            left.append((rel, children[-1].path.rsplit("/", 1)[1]))
        for child in children:
            if walk_takes(op, child):
                writes += taken_by(op, child)
            if walk_descends(op, child):
                left.append((child.path[len(op.src):], None))
    return writes, (replace(op, cursor=tuple(left), step=op.step + 1) if left else None)


def walk_takes(op: SubtreeOp, child: Entry) -> bool:
    """Not what was gone before the operation (its own walk took its children), nor what
    came after it (a chunk applied again after a crash holds later states)."""
    return not (child.version > op.version or (child.deleted and child.version < op.version))


def walk_descends(op: SubtreeOp, child: Entry) -> bool:
    """Into a directory the walk takes, and beneath any path changed after the operation (a
    chunk applied again after a crash: created again since), since what lay there before the
    operation is the walk's all the same."""
    return (walk_takes(op, child) and child.type in (DIRECTORY, None)) or (
        child.version > op.version)


def taken_by(op: SubtreeOp, child: Entry) -> list[Entry]:
    """The child's entries once the operation took it."""
    if op.kind == RENAME and op.dst is not None:
        target = op.dst + child.path[len(op.src):]
        moved = Entry(cluster=child.cluster, path=target, attrs=child.attrs, version=op.version)
        return [moved, child.ended(op.version, moved_to=target).marked(None)]
    ended = child.ended(op.version).marked(None)
    return [] if ended == child else [ended]
