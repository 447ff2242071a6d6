"""Who made each change: the pure matching of inotify events to the NameNode audit lines that
made them, one match group at a time. No Spark here: glue_jobs/attribution.py groups the lake's
rows and calls `match_group` on each group; the bench's single-process baseline calls it too.

A match group is what an event and its audit line both carry: the command class, the path and
the destination (rename) or the sources (concat). Inside a group, events run in txid order and
lines in audit-log order, and the k-th event is the k-th line - but only where the times prove
it:

- Hadoop 3.3.4's FSNamesystem (startFile, delete, renameTo, ...) logs the edit under the write
  lock, releases it, syncs the edit log and only then writes the audit line, so a line's time is
  at or after its edit's NameNode time, and two concurrent calls' lines can come out in either
  order. Both clocks are the NameNode JVM's System.currentTimeMillis.
- An event's time is known to lie in [lo, hi]: its own timestamp where Hadoop's event carries
  one; APPEND and METADATA carry none, so the last timestamp before it and the first after it
  in txid order bound it. Its line then lies in [lo, hi + window].
- An allowed line may make no event (mkdirs of an existing directory), and a line may reach the
  lake later than its event: lines are matched, not counted.

An event's user is kept only when no other reading of the log gives it another user: a line of
another user that fits the event is a rival when it is unmatched (it may be the event's own
line) or when the two events' lines could be swapped (each fits the other event). A wrong user
is worse than none, so a rival leaves the event unattributed.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

# Audit command -> match class. An event's class comes from its type (event_class).
# FSNamesystem logs a createSymlink with src=link, a concat with src=[sources] and dst=target.
AUDIT_CLASSES: dict[str, str] = {
    "create": "create", "createWithEC": "create", "mkdirs": "mkdirs",
    "createSymlink": "createSymlink", "rename": "rename", "delete": "delete",
    "append": "append", "truncate": "truncate", "concat": "concat",
    "setPermission": "setPermission", "setOwner": "setOwner",
    "setReplication": "setReplication", "setTimes": "setTimes", "setXAttr": "setXAttr",
    "removeXAttr": "removeXAttr",
    # One METADATA ACLS event (OP_SET_ACL, the whole new ACL) for each of these calls.
    "setAcl": "acl", "modifyAclEntries": "acl", "removeAclEntries": "acl",
    "removeDefaultAcl": "acl", "removeAcl": "acl",
}
METADATA_CLASSES: dict[str, str] = {
    "PERMS": "setPermission", "OWNER": "setOwner", "REPLICATION": "setReplication",
    "TIMES": "setTimes", "ACLS": "acl",
}
CREATE_CLASSES: dict[str, str] = {"FILE": "create", "DIRECTORY": "mkdirs",
                                  "SYMLINK": "createSymlink"}
OTHER_CLASSES: dict[str, str] = {"RENAME": "rename", "UNLINK": "delete", "TRUNCATE": "truncate"}
# Classes whose audit `perm=` names the result the event also carries (owner:group:mode).
_RESULT_PERM = frozenset({"create", "mkdirs", "createSymlink"})


@dataclass(frozen=True, slots=True)
class EventSide:
    """One event to attribute: the anchor of its txid (the first event of a concat's batch)."""
    txid: int
    lo: int | None  # earliest NameNode time it can have (None: unbounded)
    hi: int | None  # latest
    owner: str | None = None  # CREATE, METADATA OWNER
    group: str | None = None
    perms: str | None = None  # octal, CREATE and METADATA PERMS


@dataclass(frozen=True, slots=True)
class LineSide:
    """One allowed audit line of the group, with what an attribution row carries."""
    time: int
    host: str
    file_id: str
    offset: int
    user: str | None
    auth: str | None = None
    real_user: str | None = None
    ip: str | None = None
    caller_context: str | None = None
    perm: str | None = None

    @property
    def who(self) -> tuple[str | None, str | None]:
        return (self.user, self.real_user)


def event_class(type_: str, inode_type: str | None, metadata_type: str | None,
                xattrs_removed: bool | None, in_concat: bool) -> str | None:
    """The match class of an event; None for CLOSE (it takes its writer's user) and the agent's
    own records. A concat's batch is APPEND(target), UNLINK(source)..., CLOSE(target) under one
    txid (InotifyFSEditLogOpTranslator, OP_CONCAT_DELETE): its APPEND stands for the call."""
    if type_ == "CREATE":
        return CREATE_CLASSES.get(inode_type or "")
    if type_ == "APPEND":
        return "concat" if in_concat else "append"
    if type_ == "METADATA":
        if metadata_type == "XATTRS":
            return "removeXAttr" if xattrs_removed else "setXAttr"
        return METADATA_CLASSES.get(metadata_type or "")
    return OTHER_CLASSES.get(type_)


def mode_octal(symbolic: str) -> str | None:
    """FsPermission.toString ("rwxr-x--T") as the event's octal ("1750"); None if not one."""
    if len(symbolic) != 9:
        return None
    bits = 0
    for i, ch in enumerate(symbolic):
        if ch not in "-rwxtT":
            return None
        bits |= (ch not in "-T") << (8 - i)
    # "t" is sticky with other-execute, "T" sticky without.
    sticky = symbolic[8] in "tT"
    return f"{(sticky << 9) | bits:04o}"


def perm_agrees(cls: str, event: EventSide, perm: str | None) -> bool:
    """False when the line's `perm=` contradicts what the event says the result was: the one
    field that tells two users' creates (the owner is the creator) or chowns apart."""
    if perm is None or cls not in (*_RESULT_PERM, "setOwner", "setPermission"):
        return True
    owner, _, rest = perm.partition(":")
    group, _, symbolic = rest.rpartition(":")
    mode = mode_octal(symbolic)
    checks: list[tuple[str | None, str | None]] = []
    if cls in _RESULT_PERM or cls == "setOwner":
        checks += [(event.owner, owner), (event.group, group)]
    if cls in _RESULT_PERM or cls == "setPermission":
        checks.append((event.perms, mode))
    return all(want is None or got is None or want == got for want, got in checks)


def match_group(cls: str, events: list[EventSide], lines: list[LineSide], window_ms: int
                ) -> dict[int, LineSide]:
    """txid -> its line, for the events of one group whose user is certain."""
    events = sorted(events, key=lambda e: e.txid)
    lines = sorted(lines, key=lambda x: (x.time, x.host, x.file_id, x.offset))
    times = [x.time for x in lines]
    fits: list[list[int]] = []
    for e in events:
        first = 0 if e.lo is None else bisect_left(times, e.lo)
        top = e.hi if e.hi is not None else e.lo
        last = len(lines) if top is None else bisect_right(times, top + window_ms)
        fits.append([j for j in range(first, last) if perm_agrees(cls, e, lines[j].perm)])
    # In order: each event, in txid order, takes the first fitting line not yet taken (not
    # necessarily after the previous event's: the log's order may differ from the txids').
    owner_of: dict[int, int] = {}  # line -> event
    line_of: dict[int, int] = {}  # event -> line
    for k, candidates in enumerate(fits):
        j = next((j for j in candidates if j not in owner_of), None)
        if j is not None:
            owner_of[j], line_of[k] = k, j
    fit_sets = [set(c) for c in fits]
    out: dict[int, LineSide] = {}
    for k, j in line_of.items():
        who = lines[j].who
        rivals = (r for r in fits[k] if lines[r].who != who)
        if all(r in owner_of and j not in fit_sets[owner_of[r]] for r in rivals):
            out[events[k].txid] = lines[j]
    return out
