"""The namespace index entry and how an event changes it: pure functions, no AWS.

Why not one version per item: a partial update (CLOSE sets size, METADATA sets owner) that
arrives after a later partial update of another attribute would be refused by an item-wide
"last_txid < txid" test and lost. So every attribute is its own last-writer-wins register with
the (txid, index) of the event that set it, and the item's life is tracked as incarnations:
`born` (CREATE, or RENAME into the path) and `end` (UNLINK, or RENAME away, with `moved_to`).
An event belongs to the incarnation alive at its version; one for an older incarnation changes
nothing, and one that predates a later move of its path (or of a parent directory) is
forwarded to where in-order application would have carried it. Registers and incarnations
merge by maximum, so redelivery and any interleaving of message groups converge to the state
of in-order application. The DAL writes an entry only when it changed, guarded by `rev`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

Version = tuple[int, int]  # (txid, index)
NO_VERSION: Version = (-1, -1)
# When a change reaches a path: (version,) for an event applied where it happened; a change
# carried to the path by a later move (forwarded) reaches it at (move's version, *its own at*).
# Tuples compare lexicographically, so everything a move brings sorts after the move itself
# and in its original order among itself, and before anything that happened after the move.
At = tuple[Version, ...]
NO_AT: At = ()
ATTRIBUTES = ("type", "size", "mtime", "atime", "owner", "group", "perms", "replication",
              "symlink_target")
MAX_PREVIOUS_ENDS = 8  # forwarding history per path; older incarnations cannot still be in SQS


@dataclass(frozen=True, slots=True)
class End:
    """How an incarnation of a path ended: deleted, or moved to `moved_to`, at version `at`."""

    born: At | None
    at: At
    moved_to: str | None = None
    type: str | None = None  # the ended incarnation's type: its children may still need moving


@dataclass(frozen=True, slots=True)
class Life:
    """An incarnation older than the current one whose end has not arrived yet (its events
    came late, from another message group): kept so that its RENAME can still carry it."""

    born: At | None
    values: Mapping[str, Any] = field(default_factory=dict)
    versions: Mapping[str, Version] = field(default_factory=dict)
    landed: Mapping[str, At] = field(default_factory=dict)

    def landed_at(self, name: str) -> At:
        return self.landed.get(name) or (self.versions[name],)


@dataclass(frozen=True, slots=True)
class Entry:
    cluster: str
    path: str
    values: Mapping[str, Any] = field(default_factory=dict)
    versions: Mapping[str, Version] = field(default_factory=dict)
    # Where a register's version differs from when it reached this path (it came with a
    # move): the register belongs to the incarnation alive at that later version.
    landed: Mapping[str, At] = field(default_factory=dict)
    born: At | None = None
    end: End | None = None
    prev_ends: tuple[End, ...] = ()
    older: tuple[Life, ...] = ()  # by born; None (unknown) first
    last: Version = NO_VERSION
    rev: int = 0
    subtree_op: Mapping[str, Any] | None = None  # in-progress marker on a subtree op's roots

    @property
    def alive(self) -> bool:
        return self.end is None and (self.born is not None or bool(self.values))

    @property
    def type(self) -> str | None:
        return self.values.get("type")

    def same_state(self, other: Entry) -> bool:
        """Equal apart from the write counter: nothing to write."""
        return replace(self, rev=0) == replace(other, rev=0)

    def landed_at(self, name: str) -> At:
        return self.landed.get(name) or (self.versions[name],)

    def end_after(self, at: At) -> End | None:
        """The end of the incarnation alive at `at`, if it ended after `at`."""
        ends = list(self.prev_ends)
        if self.end is not None:
            ends.append(replace(self.end, born=self.born))
        for end in sorted(ends, key=lambda e: e.at):
            if end.at > at and (end.born is None or end.born <= at):
                return end
        return None

    def next_birth(self, at: At) -> At | None:
        """The first birth at the path after `at`: whatever was there had ended by then."""
        births = [b for b in (self.born, *(life.born for life in self.older))
                  if b is not None and b > at]
        return min(births) if births else None

    def alive_at(self, at: At) -> bool:
        """Whether the incarnation that `at` falls in exists and had not ended by then."""
        if self.born is not None and self.born > at:
            return _older_at(self, at) is not None
        return self.end is None or self.end.at > at


def _older_at(entry: Entry, at: At) -> int | None:
    """Position in entry.older of the life `at` falls in (greatest born <= at)."""
    found = None
    for i, life in enumerate(entry.older):
        if life.born is None or life.born <= at:
            found = i
    return found


def _with_older(entry: Entry, i: int | None, life: Life | None, at: At) -> Entry:
    lives = list(entry.older)
    if i is None:
        if life is not None:
            lives.append(life)
    elif life is None:
        del lives[i]
    else:
        lives[i] = life
    lives.sort(key=lambda x: x.born or NO_AT)
    return replace(entry, older=tuple(lives[-MAX_PREVIOUS_ENDS:]), last=_bump(entry, at))


def empty_entry(cluster: str, path: str) -> Entry:
    return Entry(cluster=cluster, path=path)


def _bump(entry: Entry, at: At) -> Version:
    """The newest version the entry has seen (a forwarded change: the move that carried it)."""
    return max(entry.last, at[0])


def set_values(entry: Entry, values: Mapping[str, Any], version: Version, at: At) -> Entry:
    """Attribute registers take `values` where `version` is newer. `at` is when the change
    lands on this path (the version itself, or the move that carried it here); a change older
    than the current incarnation belongs to an earlier one and is refused."""
    if not values:
        return entry
    versions = dict.fromkeys(values, version)
    if entry.born is not None and at < entry.born:
        return _merge_older(entry, values, versions, at)
    return _merge(entry, values, versions, at)


def _merge_older(entry: Entry, values: Mapping[str, Any], versions: Mapping[str, Version],
                 at: At, reg_at: Mapping[str, At] | None = None) -> Entry:
    i = _older_at(entry, at)
    if i is None and _ended_by_then(entry, at):
        return entry  # its incarnation has ended already (a redelivery): nothing to keep
    life = entry.older[i] if i is not None else Life(born=None)
    regs = _merged_registers(life.values, life.versions, life.landed, values, versions, at,
                             reg_at)
    if regs is None:
        return entry
    return _with_older(entry, i, replace(life, values=regs[0], versions=regs[1],
                                         landed=regs[2]), at)


def _merged_registers(values, versions, landed, new_values, new_versions, at,  # type: ignore[no-untyped-def]
                      reg_at=None):
    """`reg_at`: where each register lands when it differs by register (a move)."""
    out_values, out_versions, out_landed = dict(values), dict(versions), dict(landed)
    for name, value in new_values.items():
        version = new_versions[name]
        if version > out_versions.get(name, NO_VERSION):
            out_values[name], out_versions[name] = value, version
            lands = reg_at[name] if reg_at else at
            if lands != (version,):
                out_landed[name] = lands
            else:
                out_landed.pop(name, None)
    if out_values == values and out_versions == versions:
        return None
    return out_values, out_versions, out_landed


def _merge(entry: Entry, values: Mapping[str, Any], versions: Mapping[str, Version],
           at: At, reg_at: Mapping[str, At] | None = None) -> Entry:
    regs = _merged_registers(entry.values, entry.versions, entry.landed, values, versions, at,
                             reg_at)
    if regs is None:
        return entry
    return replace(entry, values=regs[0], versions=regs[1], landed=regs[2],
                   last=_bump(entry, (max(versions.values()),)))


def begin(entry: Entry, at: At) -> Entry:
    """A new incarnation of the path starts at `at` (CREATE, or a RENAME into it)."""
    if entry.born is not None and at == entry.born:
        return entry
    if any(end.born is not None and (end.born == at or _same_arrival(end.born, at))
           for end in entry.prev_ends):
        return entry  # the birth of an incarnation that has ended already: a redelivery
    if entry.born is not None and _same_arrival(entry.born, at):
        # One move, seen twice: the walk carried the entry at (move,), and its CREATE, late at
        # the source, was forwarded through the same move to (move, create). One incarnation.
        return replace(entry, born=min(entry.born, at))
    if entry.born is not None and at < entry.born:
        return _begin_older(entry, at)
    prev, end, older = entry.prev_ends, entry.end, entry.older
    kept = [k for k in entry.versions if entry.landed_at(k) >= at]
    gone = [k for k in entry.versions if k not in kept]
    if end is not None and end.at <= at:
        prev, end = (*prev, replace(end, born=entry.born)), None
    elif entry.born is not None or gone:
        # Overwritten, or its end (a RENAME from another group, say) has not arrived: keep it
        # as an older life, so that end can still carry it.
        older = (*older, Life(born=entry.born, values={k: entry.values[k] for k in gone},
                              versions={k: entry.versions[k] for k in gone},
                              landed={k: entry.landed[k] for k in gone if k in entry.landed}))
    # Registers that reached the path before `at` belong to earlier incarnations.
    return replace(
        entry, born=at, end=end, prev_ends=_cap(prev), older=older[-MAX_PREVIOUS_ENDS:],
        values={k: entry.values[k] for k in kept},
        versions={k: entry.versions[k] for k in kept},
        landed={k: entry.landed[k] for k in kept if k in entry.landed},
        last=_bump(entry, at),
    )


def _ended_by_then(entry: Entry, at: At) -> bool:
    """`at` falls in a known incarnation that has ended since."""
    return any(e.born is not None and (e.born <= at or _same_arrival(e.born, at)) and at < e.at
               for e in entry.prev_ends)


def _same_arrival(a: At, b: At) -> bool:
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return len(short) < len(long_) and long_[:len(short)] == short


def _begin_older(entry: Entry, at: At) -> Entry:
    """An incarnation older than the current one starts at `at`: registers that reached the
    path at or after `at` in the life before it move into it."""
    i = _older_at(entry, at)
    if i is not None and entry.older[i].born == at:
        return entry
    life = Life(born=at)
    if i is not None:
        before = entry.older[i]
        moving = [k for k in before.versions if before.landed_at(k) >= at]
        life = Life(born=at, values={k: before.values[k] for k in moving},
                    versions={k: before.versions[k] for k in moving},
                    landed={k: before.landed[k] for k in moving if k in before.landed})
        rest = [k for k in before.versions if k not in moving]
        entry = _with_older(entry, i, replace(
            before, values={k: before.values[k] for k in rest},
            versions={k: before.versions[k] for k in rest},
            landed={k: before.landed[k] for k in rest if k in before.landed}), at)
    return _with_older(entry, None, life, at)


def finish(entry: Entry, at: At, moved_to: str | None) -> Entry:
    """The incarnation alive at `at` ends there: deleted, or moved to `moved_to`."""
    new_end = End(None, at, moved_to, entry.type)
    if entry.born is not None and at < entry.born:
        i = _older_at(entry, at)
        if i is None:
            return _remember(entry, replace(new_end, type=None))
        life = entry.older[i]
        ended = End(life.born, at, moved_to, life.values.get("type"))
        return _remember(_with_older(entry, i, None, at), ended)
    if entry.end is None:
        later = [k for k in entry.versions if entry.landed_at(k) > at]
        if entry.born is None and later:
            # Birth unknown, and changes that reached the path after `at`: they belong to a
            # later incarnation (its birth, a move into the path, has not arrived), which
            # stays; the one that ends here keeps only what reached the path before.
            kept = replace(entry, values={k: entry.values[k] for k in later},
                           versions={k: entry.versions[k] for k in later},
                           landed={k: entry.landed[k] for k in later if k in entry.landed})
            return _remember(kept, new_end)
        return replace(entry, end=new_end, last=_bump(entry, at))
    if entry.end.at == at:
        return entry
    if at > entry.end.at:  # an incarnation in between whose CREATE has not arrived yet
        old = replace(entry.end, born=entry.born)
        return replace(entry, end=new_end, prev_ends=_cap((*entry.prev_ends, old)),
                       last=_bump(entry, at))
    return _remember(entry, new_end)


def _remember(entry: Entry, end: End) -> Entry:
    if any(e.at == end.at for e in entry.prev_ends):
        return entry
    ends = tuple(sorted((*entry.prev_ends, end), key=lambda e: e.at))
    return replace(entry, prev_ends=_cap(ends), last=_bump(entry, end.at))


def _cap(ends: tuple[End, ...]) -> tuple[End, ...]:
    return ends[-MAX_PREVIOUS_ENDS:]


@dataclass(frozen=True, slots=True)
class Carried:
    """The registers a move carries away, with when each had reached the source path."""

    values: Mapping[str, Any] = field(default_factory=dict)
    versions: Mapping[str, Version] = field(default_factory=dict)
    landed: Mapping[str, At] = field(default_factory=dict)


def type_at(entry: Entry, at: At) -> str | None:
    """The type of the incarnation alive at `at` (or the one that ended exactly there)."""
    if entry.born is None or at >= entry.born:
        return entry.type
    for end in entry.prev_ends:
        if end.at == at:
            return end.type
    i = _older_at(entry, at)
    return entry.older[i].values.get("type") if i is not None else None


def values_as_of(entry: Entry, at: At) -> Carried:
    """The registers as they stood just before `at` (what a RENAME at `at` carries away)."""
    regs: Entry | Life = entry
    if entry.born is not None and at < entry.born:
        i = _older_at(entry, at)
        if i is None:
            return Carried()
        regs = entry.older[i]
    names = [k for k in regs.versions if regs.landed_at(k) < at]
    return Carried({k: regs.values[k] for k in names}, {k: regs.versions[k] for k in names},
                   {k: regs.landed_at(k) for k in names})


def values_between(entry: Entry, after: At, before: At) -> Carried:
    """The current registers that reached the path between two of its ends."""
    names = [k for k in entry.versions if after < entry.landed_at(k) < before]
    return Carried({k: entry.values[k] for k in names}, {k: entry.versions[k] for k in names},
                   {k: entry.landed_at(k) for k in names})


def move_in(entry: Entry, at: At, carried: Carried) -> Entry:
    """The path receives a moved entry at `at`: a new incarnation holding the source's
    registers with their own versions, so later-forwarded older changes still apply. Each
    register lands at (at, *when it had reached the source*): a change the source got later
    than another keeps that order here, whichever move brought it."""
    moved = begin(entry, at)
    if not carried.values:
        return moved
    reg_at = {k: at + carried.landed[k] for k in carried.values}
    if moved.born is not None and at < moved.born:
        return _merge_older(moved, carried.values, carried.versions, at, reg_at)
    return _merge(moved, carried.values, carried.versions, at, reg_at)


def with_marker(entry: Entry, marker: Mapping[str, Any] | None) -> Entry:
    return replace(entry, subtree_op=marker)
