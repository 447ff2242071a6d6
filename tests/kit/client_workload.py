"""The generated workload (tests/kit/workload.py) as a Hadoop client runs it against a real NameNode.

    from tests.kit.client_workload import client_workload
    work = client_workload(ops=30_000, seed=7, mass_delete=800)
    hdfs.run(work.ops)     # the kit's vocabulary (tests/kit/hadoop/ops.py), in order

The generator writes what a busy NameNode logs; a client can only ask for what it logs. So the
generated log is translated the agent's way (one txid = one client call: OP_CONCAT_DELETE's
APPEND, UNLINKs and CLOSE share theirs) and each call becomes the client operation that makes
the NameNode log it: CREATE -> write / mkdirs / symlink, APPEND -> append, RENAME -> rename,
UNLINK -> delete, METADATA -> chmod / chown / set_times / setrep / setxattr / setacl,
TRUNCATE -> truncate, a multi-event txid -> concat. CLOSE alone follows from write and append.

The generator assumes a namespace older than its log (retention deletes of old partitions,
appends to existing logs, chmod of old days). A client call on a path that does not exist
fails, so the workload first creates what a call acts on (an empty file, or a directory),
tracked in a namespace model; calls the model shows cannot succeed (a file where a directory
must be) are left out and counted. The NameNode then logs more events than the generator
counted (parents made by create, the prerequisites): the source of truth for what a live
run must deliver is what the NameNode yields, not this module.

File contents are small: a write with data costs ~30 ms on a one-DataNode MiniDFSCluster (the
pipeline's ack and the block report) against ~2 ms for an empty file, so only every
`data_every`-th file, and the files that need bytes (append, concat, truncate), get data.
"""

from __future__ import annotations

import io
import posixpath
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import groupby
from typing import Any

from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType
from onprem_agent.editlog import read_ops
from onprem_agent.translate import translate_ops
from tests.kit.workload import write_edit_log

Op = list[Any]
_FILE, _DIR = "file", "dir"

# For a cluster that runs these calls: ACL events need ACLs enabled. The client's close() waits
# for the DataNode's block report with a backoff starting at 400 ms
# (dfs.client.block.write.locateFollowingBlock.initial.delay.ms): ~240 ms per small file on a
# one-DataNode MiniDFSCluster; 10 ms makes it ~30 ms.
HDFS_CONF = {"dfs.namenode.acls.enabled": "true",
             "dfs.client.block.write.locateFollowingBlock.initial.delay.ms": "10"}
CHUNK = 250  # calls per round trip to the cluster's process


def run_calls(hdfs: Any, ops: Sequence[Op], stop: threading.Event | None = None) -> None:
    """Runs `ops` on an HdfsCluster (tests/kit/hadoop) in chunks, until done or `stop`."""
    for i in range(0, len(ops), CHUNK):
        if stop is not None and stop.is_set():
            return
        hdfs.run(ops[i:i + CHUNK])


@dataclass(frozen=True, slots=True)
class ClientWorkload:
    ops: list[Op]  # in the kit's vocabulary
    calls: int  # generated client calls (txids with events)
    skipped: int  # generated calls the namespace model showed could not succeed
    prerequisites: int  # ops added to create what a generated call acts on
    by_op: dict[str, int] = field(default_factory=dict)
    # The generated mass delete when it runs as a user of its own: its user and the files it
    # deletes (all under one directory the superuser hands to that user first).
    mass_delete_user: str | None = None
    mass_delete_paths: tuple[str, ...] = ()


def client_workload(*, ops: int, seed: int = 0, mass_delete: int = 0, data_every: int = 8,
                    root: str = "", mass_delete_user: str | None = None) -> ClientWorkload:
    """The generated log of `ops` records (tests.kit.workload.write_edit_log) as client calls;
    every path under `root` when given (a second workload beside the first). With
    `mass_delete_user`, the mass delete runs as that user (`as_user`), as a cleanup job's
    account would make it on a real cluster; every other call runs as the superuser."""
    text = io.StringIO()
    summary = write_edit_log(text, ops=ops, seed=seed, mass_delete=mass_delete)
    events = translate_ops(read_ops(io.BytesIO(text.getvalue().encode())), "generated",
                           source="generated")
    if root:
        events = (_under(root, e) for e in events)
    burst = summary.mass_delete
    as_user = None if burst is None or mass_delete_user is None else (
        mass_delete_user, burst.first_txid, burst.last_txid)
    return client_ops(events, data_every=data_every, mass_delete_as=as_user)


def _under(root: str, e: HdfsEvent) -> HdfsEvent:
    def moved(path: str | None) -> str | None:
        return None if path is None else root.rstrip("/") + path

    return replace(e, path=moved(e.path), dst_path=moved(e.dst_path),
                   symlink_target=moved(e.symlink_target))


def client_ops(events: Sequence[HdfsEvent] | Any, *, data_every: int = 8,
               mass_delete_as: tuple[str, int, int] | None = None) -> ClientWorkload:
    """Client calls that make a NameNode log `events` (grouped by txid), in order;
    `mass_delete_as` = (user, first txid, last txid): the UNLINKs of those txids as `user`."""
    plan = _Plan(data_every)
    calls = 0
    burst: list[HdfsEvent] = []
    for txid, group in groupby(events, key=lambda e: e.txid):
        calls += 1
        calls_of = list(group)
        if mass_delete_as and mass_delete_as[1] <= txid <= mass_delete_as[2]:
            burst += calls_of
            if txid == mass_delete_as[2]:
                plan.delete_as(mass_delete_as[0], burst)
            continue
        plan.call(calls_of)
    return ClientWorkload(ops=plan.ops, calls=calls, skipped=plan.skipped,
                          prerequisites=plan.prerequisites,
                          by_op=dict(Counter(op[0] for op in plan.ops)),
                          mass_delete_user=plan.deleter, mass_delete_paths=tuple(plan.deleted))


class _Namespace:
    """Which paths exist, as file (with its size) or directory: enough to keep every call
    valid."""

    def __init__(self) -> None:
        self.kind: dict[str, str] = {"/": _DIR}
        self.size: dict[str, int] = {}
        self.children: dict[str, set[str]] = {"/": set()}

    def exists(self, path: str) -> bool:
        return path in self.kind

    def is_file(self, path: str) -> bool:
        return self.kind.get(path) == _FILE

    def is_dir(self, path: str) -> bool:
        return self.kind.get(path) == _DIR

    def can_hold(self, path: str) -> bool:
        """No ancestor of `path` is a file (HDFS makes missing parents as directories)."""
        parent = posixpath.dirname(path)
        while parent != "/":
            if self.is_file(parent):
                return False
            if self.is_dir(parent):
                return True
            parent = posixpath.dirname(parent)
        return True

    def add(self, path: str, kind: str, size: int = 0) -> None:
        parent = posixpath.dirname(path)
        if parent not in self.kind:
            self.add(parent, _DIR)
        self.kind[path] = kind
        self.children[parent].add(path)
        if kind == _DIR:
            self.children.setdefault(path, set())
        else:
            self.size[path] = size

    def remove(self, path: str) -> None:
        for child in list(self.children.get(path, ())):
            self.remove(child)
        self.children.pop(path, None)
        self.children[posixpath.dirname(path)].discard(path)
        del self.kind[path]
        self.size.pop(path, None)

    def move(self, src: str, dst: str) -> None:
        kind, size = self.kind[src], self.size.get(src, 0)
        kids = list(self.children.get(src, ()))
        self.add(dst, kind, size)
        for child in kids:
            self.move(child, dst + child[len(src):])
        self.remove(src)


def _valid_name(path: str) -> bool:
    """DFSUtil.isValidName: the generator's scratch names include "C:\\Users\\export.csv",
    which HDFS refuses (no ':' in a component)."""
    return all(part not in (".", "..") and ":" not in part for part in path.split("/")[1:])


def _looks_like_file(path: str) -> bool:
    name = posixpath.basename(path)
    return name.startswith("part-") or "." in name.lstrip(".")


class _Plan:
    def __init__(self, data_every: int) -> None:
        self.ns = _Namespace()
        self.ops: list[Op] = []
        self.skipped = self.prerequisites = 0
        self._data_every, self._files = data_every, 0
        self.deleter: str | None = None
        self.deleted: list[str] = []

    # -- making what a call acts on ------------------------------------------------------------
    def _data(self, size: int | None, force: bool = False) -> str:
        self._files += 1
        if not force and self._files % self._data_every:
            return ""
        return "x" * (1 + (size or 0) % 200)

    def _need(self, path: str, kind: str, *, data: bool = False) -> bool:
        """Makes `path` exist as `kind` (with bytes when `data`); False when it cannot."""
        ns = self.ns
        if ns.exists(path):
            if ns.kind[path] != kind:
                return False
            if kind == _FILE and data and not ns.size[path]:
                self._write(path, self._data(None, force=True), overwrite=True)
                self.prerequisites += 1
            return True
        if not ns.can_hold(path):
            return False
        self.prerequisites += 1
        if kind == _DIR:
            self.ops.append(["mkdirs", path])
            ns.add(path, _DIR)
        else:
            self._write(path, self._data(None, force=data), overwrite=False)
        return True

    def _exists_or_make(self, path: str) -> bool:
        """Any existing path; else one made as its name suggests (a file or a directory)."""
        return self.ns.exists(path) or self._need(
            path, _FILE if _looks_like_file(path) else _DIR)

    def _write(self, path: str, data: str, *, overwrite: bool) -> None:
        self.ops.append(["write", path, data, overwrite])
        self.ns.add(path, _FILE, len(data))

    # -- one generated call ----------------------------------------------------------------------
    def call(self, events: list[HdfsEvent]) -> None:
        first = events[0]
        if not all(_valid_name(p) for e in events for p in (e.path, e.dst_path) if p):
            self.skipped += 1
            return
        if len(events) > 1:
            ok = self._concat(first.path, [e.path for e in events
                                           if e.type is EventType.UNLINK])
        else:
            handler = getattr(self, f"_{first.type.value.lower()}")
            ok = handler(first)
        if ok is False:
            self.skipped += 1

    def _create(self, e: HdfsEvent) -> bool | None:
        ns, path = self.ns, e.path
        if e.inode_type is INodeType.DIRECTORY:
            if ns.is_dir(path):
                return None
            if ns.exists(path) or not ns.can_hold(path):
                return False
            self.ops.append(["mkdirs", path])
            ns.add(path, _DIR)
        elif e.inode_type is INodeType.SYMLINK:
            if ns.exists(path) or not ns.can_hold(path):
                return False
            self.ops.append(["symlink", e.symlink_target, path])
            ns.add(path, _FILE)
        else:
            if ns.is_dir(path) or not ns.can_hold(path):
                return False
            # An existing file is replaced as `create(overwrite=true)` replaces it.
            self._write(path, self._data(e.block_size), overwrite=ns.exists(path))
        return True

    def _close(self, e: HdfsEvent) -> None:
        return None  # logged by the write or append that closes the file

    def _append(self, e: HdfsEvent) -> bool:
        if not self._need(e.path, _FILE):
            return False
        data = "y" * 16
        self.ops.append(["append", e.path, data, bool(e.new_block)])
        self.ns.size[e.path] += len(data)
        return True

    def _rename(self, e: HdfsEvent) -> bool:
        ns, src, dst = self.ns, e.path, e.dst_path
        assert dst is not None
        if not self._exists_or_make(src):
            return False
        if dst == src or dst.startswith(src + "/") or not ns.can_hold(dst):
            return False
        overwrite = False
        if ns.exists(dst):
            # FileSystem.rename(a, b) moves a *into* an existing directory b; the generator
            # means "replace": only a file over a file can be (Options.Rename.OVERWRITE).
            if not (ns.is_file(dst) and ns.is_file(src)):
                return False
            overwrite = True
        parent = posixpath.dirname(dst)
        if not ns.exists(parent):
            # rename(a, b) fails when b's parent is missing (the generator's committers made
            # it with the partition's first file).
            self.ops.append(["mkdirs", parent])
            ns.add(parent, _DIR)
            self.prerequisites += 1
        self.ops.append(["rename", src, dst, overwrite])
        if overwrite:
            ns.remove(dst)
        ns.move(src, dst)
        return True

    def _unlink(self, e: HdfsEvent) -> bool:
        if not self._exists_or_make(e.path):
            return False
        self.ops.append(["delete", e.path, True])
        self.ns.remove(e.path)
        return True

    def delete_as(self, user: str, unlinks: list[HdfsEvent]) -> None:
        """The burst's files made first (as the superuser), their directories handed to `user`
        (a delete needs write access to the parent; the kit's NameNode checks permissions),
        then every delete in one `as_user` op: one FileSystem for the burst, not one a call."""
        paths = []
        for e in unlinks:
            if e.type is not EventType.UNLINK or not _valid_name(e.path) \
                    or not self._exists_or_make(e.path):
                self.skipped += 1
                continue
            paths.append(e.path)
        for parent in sorted({posixpath.dirname(p) for p in paths}):
            self.ops.append(["chown", parent, user, None])
            self.prerequisites += 1
        self.ops.append(["as_user", user, [["delete", p, True] for p in paths]])
        for p in paths:
            self.ns.remove(p)
        self.deleter, self.deleted = user, paths

    def _truncate(self, e: HdfsEvent) -> bool:
        if not self._need(e.path, _FILE, data=True):
            return False
        # To 0, a block boundary: truncating inside a block starts block recovery, ~1.5 s per
        # call on a MiniDFSCluster.
        self.ops.append(["truncate", e.path, 0])
        self.ns.size[e.path] = 0
        return True

    def _metadata(self, e: HdfsEvent) -> bool:
        path, kind = e.path, e.metadata_type
        if kind in (MetadataType.REPLICATION, MetadataType.TIMES):
            need = _FILE  # setReplication on a directory logs nothing
        elif kind is MetadataType.ACLS and any(a.startswith("default:") for a in e.acls or ()):
            need = _DIR  # only directories may have a default ACL
        else:
            need = _FILE if _looks_like_file(path) else _DIR
        if not self._need(path, need):
            return False
        if kind is MetadataType.PERMS:
            self.ops.append(["chmod", path, e.perms])
        elif kind is MetadataType.OWNER:
            self.ops.append(["chown", path, e.owner, e.group])
        elif kind is MetadataType.TIMES:
            self.ops.append(["set_times", path, e.mtime, e.atime])
        elif kind is MetadataType.REPLICATION:
            self.ops.append(["setrep", path, e.replication])
        elif kind is MetadataType.ACLS:
            self.ops.append(["setacl", path, list(e.acls or ())])
        elif e.xattrs_removed:
            for x in e.xattrs or ():
                self.ops.append(["removexattr", path, f"{x.namespace.lower()}.{x.name}"])
        else:
            for x in e.xattrs or ():
                self.ops.append(["setxattr", path, f"{x.namespace.lower()}.{x.name}",
                                 x.value or ""])
        return True

    def _concat(self, target: str, sources: list[str]) -> bool:
        ns = self.ns
        if not sources or any(posixpath.dirname(s) != posixpath.dirname(target)
                              for s in sources):
            return False
        # Hadoop refuses an empty source ("invalid or empty or underConstruction").
        if not self._need(target, _FILE) or not all(self._need(s, _FILE, data=True)
                                                   for s in sources):
            return False
        self.ops.append(["concat", target, sources])
        ns.size[target] += sum(ns.size[s] for s in sources)
        for s in sources:
            ns.remove(s)
        return True
