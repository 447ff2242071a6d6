"""Directory RENAME, UNLINK and SNAPSHOT: the subtree moves or goes.

DynamoDB cannot query by key prefix, but an entry's partition is its parent directory, so a
subtree is a walk: move or end each child of a directory, go on into child directories. One
walk, two sources of children. Within a chunk the walk reads them from the chunk's view
(`walk_held`: the table's partitions listed for the chunk, level by level across all its walks
at once, plus what the chunk itself put there). A subtree larger than a chunk's listing budget
takes what the chunk listed, and the directories it did not reach (the frontier) are walked from
the table (`walk_step`), the chunk's own changes written first. That walk's position is a list
of (directory relative to the root, last child done, its shard count); each step reads every
directory of it at once (parallel Queries, a page each), as many as the step's memory budget
holds, so a tree costs a step per level, not per directory. The sequencer saves the walk (as
JSON) in its position between steps, and finishes it before applying anything later: the
events are in order, so every child the walk meets was there before the operation (or was
ended by this very operation, in a step applied before a crash: done again, the same way).
Until the walk ends, its root entries carry a marker readers report as "in progress".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from lambdas.ingest.index_model import Entry, Version

RENAME = "RENAME"
UNLINK = "UNLINK"
SNAPSHOT = "SNAPSHOT"  # a listed directory: what it held before the listing goes
# 4: frames carry their directory's shard count; 3 (read: shard counts unknown) is what a
# walk saved by the consumer before it holds.
CONTINUATION_VERSION = 4
# (directory relative to src, last name done, its shard count; None: not known, read first)
Frame = tuple[str, str | None, int | None]
# The fewest children a step asks of one directory: a step over a wide level shares its memory
# budget out, so that at this size it still reads (budget / MIN_DIRECTORY_PAGE) directories.
MIN_DIRECTORY_PAGE = 10
# The cursor is saved in the position item, which DynamoDB holds up to 400 KB: a step adds no
# more frames than this many bytes of them (the rest of a page waits for the next step).
MAX_CURSOR_BYTES = 200_000


class ChildPages(Protocol):
    def get_many(self, cluster: str, paths: Iterable[str]) -> dict[str, Entry]:
        """Stored entries among `paths` (absent ones are left out)."""
        ...

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
    cursor: tuple[Frame, ...] = (("", None, None),)
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
            if d.get("continuation") not in (3, CONTINUATION_VERSION):
                raise ValueError(f"unknown continuation version {d.get('continuation')!r}")
            if d["kind"] not in (RENAME, UNLINK, SNAPSHOT):
                raise ValueError(f"unknown subtree operation {d['kind']!r}")
            txid, event_index = d["version"]
            return cls(kind=d["kind"], cluster=str(d["cluster"]),
                       version=(int(txid), int(event_index)),
                       src=str(d["src"]), dst=d.get("dst"),
                       cursor=tuple(_frame(f) for f in d["cursor"]),
                       step=int(d["step"]))
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a subtree continuation: {exc!r}") from exc


def _frame(saved: list[Any]) -> Frame:
    rel, after, *shards = saved
    if after is not None and not isinstance(after, str):
        raise ValueError(f"frame {saved!r}: the last name done must be a string or null")
    count = shards[0] if shards else None
    if count is not None and not isinstance(count, int):
        raise ValueError(f"frame {saved!r}: the shard count must be an integer or null")
    return str(rel), after, count


def walk_held(children_of: Callable[[str], list[Entry] | None],
              op: SubtreeOp) -> tuple[list[Entry], list[str]]:
    """The walk over held children: the entries to write, and the frontier, the directories
    it met whose children are not held (empty: the walk is whole)."""
    writes: list[Entry] = []
    frontier: list[str] = []
    stack = [op.src]
    while stack:
        directory = stack.pop()
        children = children_of(directory)
        if children is None:
            frontier.append(directory)  # go on: the view lists a level's missing ones at once
            continue
        for child in children:
            if not child.stored or not walk_takes(op, child):
                continue  # unstored: a path the chunk creates later, absent until then
            writes += taken_by(op, child)
        for child in children:
            if child.stored and walk_descends(op, child):
                stack.append(child.path)
    return writes, frontier


def walk_step(pages: ChildPages, op: SubtreeOp, *,
              page: int, budget: int) -> tuple[list[Entry], SubtreeOp | None]:
    """One step: the entries to write and the walk left (None: every directory is done).

    Every directory of the cursor is read at once, up to `budget` children in all: a wide
    level shares the budget out (MIN_DIRECTORY_PAGE at least each), a lone directory gets
    `page`; a directory that fills its page goes on in the next step."""
    frames = list(op.cursor)
    width = min(len(frames), max(1, budget // MIN_DIRECTORY_PAGE))
    taken, left = frames[-width:], frames[:-width]
    limit = min(page, max(1, budget // width))  # MIN_DIRECTORY_PAGE at least, as budgets go
    parents = [(op.src + rel if rel else op.src, after) for rel, after, _ in taken]
    unknown = [p for (p, _), (_, _, n) in zip(parents, taken, strict=True) if n is None]
    found = pages.get_many(op.cluster, unknown) if unknown else {}
    shards = [n if n is not None else (found[p].shards if p in found else 0)
              for (p, _), (_, _, n) in zip(parents, taken, strict=True)]
    writes: list[Entry] = []
    continued: list[Frame] = []
    descended: list[Frame] = []
    room = MAX_CURSOR_BYTES - sum(_frame_bytes(f) for f in left)
    listings = pages.children_many(op.cluster, parents, limit=limit, shards=shards)
    for (rel, after, n), children in zip(taken, listings, strict=True):
        done = after
        for child in children:
            below = (child.path[len(op.src):], None, child.shards)
            if walk_descends(op, child):
                # The cursor is full: the rest of the page waits. One descent a step goes
                # on all the same: it leads to leaves, whose frames end and free room.
                name = child.path.rsplit("/", 1)[1]
                if descended and room < _frame_bytes(below) + _frame_bytes((rel, name, n)):
                    break
                room -= _frame_bytes(below)
                descended.append(below)
            if walk_takes(op, child):
                writes += taken_by(op, child)
            done = child.path.rsplit("/", 1)[1]
        else:
            if len(children) < limit:  # the partition's end
                continue
        continued.append((rel, done, n))
        room -= _frame_bytes(continued[-1])
    # Deepest last: the next step reads them first, so a full cursor drains through leaves.
    left += continued + descended
    return writes, (replace(op, cursor=tuple(left), step=op.step + 1) if left else None)


def frontier_cursor(op: SubtreeOp, frontier: Sequence[str]) -> tuple[Frame, ...]:
    """The table walk's cursor from a chunk's frontier. Over MAX_CURSOR_BYTES, directories
    give way to their parents (listed and taken by the chunk already: taken again, the same
    way, as after a crash), level by level, until the cursor fits."""
    dirs = sorted(set(frontier))
    while (sum(_frame_bytes((d[len(op.src):], None, None)) for d in dirs) > MAX_CURSOR_BYTES
           and dirs != [op.src]):
        dirs = sorted({d if d == op.src else d.rsplit("/", 1)[0] or "/" for d in dirs})
        held = set(dirs)
        dirs = [d for d in dirs if not any(a in held for a in _ancestors(d, op.src))]
    return tuple((d[len(op.src):], None, None) for d in dirs)


def _ancestors(path: str, root: str) -> list[str]:
    """`path`'s ancestors from `root` down, `root` included (path itself not)."""
    out = []
    cut = path.rfind("/")
    while cut >= len(root):
        out.append(path[:cut])
        cut = path.rfind("/", 0, cut)
    return out


def _frame_bytes(frame: Frame) -> int:
    rel, after, _ = frame
    return len(rel.encode()) + len((after or "").encode()) + 16  # JSON quotes, commas, count


def walk_takes(op: SubtreeOp, child: Entry) -> bool:
    """Not what was gone before the operation (its own walk took its children), nor what
    came after it (a chunk applied again after a crash holds later states)."""
    return not (child.version > op.version or (child.deleted and child.version < op.version))


def walk_descends(op: SubtreeOp, child: Entry) -> bool:
    """Into a directory the walk takes, and beneath any path changed after the operation (a
    chunk applied again after a crash: created again since), since what lay there before the
    operation is the walk's all the same."""
    return (walk_takes(op, child) and child.may_have_children) or (
        child.version > op.version)


def taken_by(op: SubtreeOp, child: Entry) -> list[Entry]:
    """The child's entries once the operation took it."""
    if op.kind == RENAME and op.dst is not None:
        target = op.dst + child.path[len(op.src):]
        moved = Entry(cluster=child.cluster, path=target, attrs=child.attrs, version=op.version)
        return [moved, child.ended(op.version, moved_to=target).marked(None)]
    ended = child.ended(op.version).marked(None)
    return [] if ended == child else [ended]
