"""Directory RENAME and UNLINK: the whole subtree moves or goes, a bounded slice at a time.

DynamoDB cannot query by key prefix, but the partition of an entry is its parent directory, so
a subtree is a depth-first walk: Query the directory's partition, handle each child, descend
into child directories. The walk's position is a stack of (directory relative to the subtree
root, last child done); each step handles `subtree_budget` children, and the sequencer saves
the operation (as JSON) in its position between steps, so a drain that runs out of time is
resumed exactly there by the next one. Until the walk finishes, the subtree's root entries carry
a `subtree_op` marker that readers report as "in progress".

A child is moved (or deleted) only if it was alive at the operation's version; children
created later belong to the new namespace and stay. Every step is an idempotent merge, so a
step repeated after a failure does no harm.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from lambdas.ingest.index_model import At, Version

RENAME = "RENAME"
UNLINK = "UNLINK"
SNAPSHOT = "SNAPSHOT"  # a listed directory: what it held before the listing goes (see index)
CONTINUATION_VERSION = 2  # 2: src_at is a list of versions (index_model.At), dst_origin


@dataclass(frozen=True, slots=True)
class SubtreeOp:
    kind: str  # RENAME | UNLINK | SNAPSHOT (children end as for UNLINK; the root stays)
    cluster: str
    version: Version  # the (txid, index) of the RENAME or UNLINK event
    src: str  # where the subtree is (after any forwarding)
    src_at: At  # when it leaves src (see index_model.At)
    dst: str | None = None  # where it goes (RENAME into the indexed prefixes only)
    # The RENAME's own destination: each child lands from there at the RENAME's version, so
    # a later end of the child's own path (not only of dst) is followed.
    dst_origin: str | None = None
    cursor: tuple[tuple[str, str | None], ...] = (("", None),)
    step: int = 0  # steps taken so far

    def marker(self) -> dict[str, Any]:
        return {"op": self.kind, "txid": self.version[0], "index": self.version[1],
                "src": self.src, "dst": self.dst}

    def advanced(self, cursor: list[tuple[str, str | None]]) -> SubtreeOp:
        return replace(self, cursor=tuple(cursor), step=self.step + 1)

    def to_json(self) -> str:
        return json.dumps({
            "continuation": CONTINUATION_VERSION, "kind": self.kind, "cluster": self.cluster,
            "version": list(self.version), "src": self.src, "src_at": _at_json(self.src_at),
            "dst": self.dst,
            "dst_origin": self.dst_origin,
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
            return cls(
                kind=d["kind"], cluster=str(d["cluster"]), version=_version(d["version"]),
                src=str(d["src"]), src_at=_at(d["src_at"]), dst=d.get("dst"),
                dst_origin=d.get("dst_origin"),
                cursor=tuple((str(rel), after) for rel, after in d["cursor"]),
                step=int(d["step"]),
            )
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a subtree continuation: {exc!r}") from exc


def _version(value: Any) -> Version:
    txid, index = value
    return int(txid), int(index)


def _at_json(at: At) -> list[list[int]]:
    return [list(v) for v in at]


def _at(value: Any) -> At:
    if not value or not all(isinstance(v, list) for v in value):
        raise ValueError(f"not a list of [txid, index] pairs: {value!r}")
    return tuple(_version(v) for v in value)
