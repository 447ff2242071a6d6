"""Random namespace histories as events: valid operation sequences over a small namespace under
a prefix, as the NameNode would log them (files: CREATE then CLOSE; renames never into
themselves), and how the agent could ship them (in chunks, across a purged gap)."""

from __future__ import annotations

import random
from collections.abc import Iterator

from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType
from tests.kit.replay import in_order_state

CLUSTER = "prod"


class RandomNamespace:
    def __init__(self, rng: random.Random, prefix: str = "/data", cluster: str = CLUSTER,
                 first_txid: int = 100, dir_op_depth: int = 1) -> None:
        """Directories are renamed or deleted only at depth >= dir_op_depth ("/data/x": 2)."""
        self.rng, self.prefix, self.cluster = rng, prefix, cluster
        self.dir_op_depth = dir_op_depth
        self.txid = first_txid
        self.ns: dict[str, str] = {prefix: "DIRECTORY"}  # path -> FILE | DIRECTORY
        self.events: list[HdfsEvent] = [self._ev(EventType.CREATE, prefix, **self._mk_dir())]
        self.ns[prefix] = "DIRECTORY"

    def _ev(self, type_: EventType, path: str, index: int = 0, **kw: object) -> HdfsEvent:
        if index == 0:
            self.txid += 1
        return HdfsEvent(cluster=self.cluster, txid=self.txid, index=index, type=type_,
                         path=path, **kw)  # type: ignore[arg-type]

    def _mk_dir(self) -> dict:
        ts = 1_700_000_000_000 + self.txid
        return dict(timestamp=ts, inode_type=INodeType.DIRECTORY, ctime=ts, owner="hdfs",
                    group="hadoop", perms="0755")

    def _dirs(self) -> list[str]:
        return [p for p, t in self.ns.items() if t == "DIRECTORY"]

    def _new_name(self, parent: str) -> str:
        for _ in range(20):
            path = f"{parent}/{self.rng.choice('abcdefgh')}{self.rng.randrange(4)}"
            if path not in self.ns:
                return path
        return f"{parent}/n{self.txid}"

    def step(self) -> list[HdfsEvent]:
        rng = self.rng
        others = [p for p in self.ns if p != self.prefix]
        choice = rng.random()
        ts = 1_700_000_000_000 + self.txid * 1000
        if choice < 0.2 or not others:
            path = self._new_name(rng.choice(self._dirs()))
            self.ns[path] = "DIRECTORY"
            return [self._ev(EventType.CREATE, path, **self._mk_dir())]
        if choice < 0.45:
            files = [p for p in others if self.ns[p] == "FILE"]
            path = (rng.choice(files) if files and rng.random() < 0.2
                    else self._new_name(rng.choice(self._dirs())))
            self.ns[path] = "FILE"
            create = self._ev(EventType.CREATE, path, timestamp=ts, inode_type=INodeType.FILE,
                              ctime=ts, replication=3, owner=rng.choice(["alice", "bob"]),
                              group="hadoop", perms="0644", overwrite=True, block_size=128)
            close = self._ev(EventType.CLOSE, path, timestamp=ts + 5,
                             size=rng.randrange(0, 10_000))
            return [create, close]
        path = rng.choice(others)
        movable = self.ns[path] == "FILE" or path.count("/") >= self.dir_op_depth
        if choice < 0.65 or not movable:
            kind = rng.choice(list(MetadataType)[:4])
            kw: dict = {"metadata_type": kind}
            if kind == MetadataType.TIMES:
                kw.update(mtime=ts, atime=rng.choice([ts, -1]))
            elif kind == MetadataType.REPLICATION:
                kw.update(replication=rng.randrange(1, 5))
            elif kind == MetadataType.OWNER:
                kw.update(owner=rng.choice(["carol", None]), group=rng.choice(["etl", None]))
            else:
                kw.update(perms=rng.choice(["0600", "0700", "0640"]))
            return [self._ev(EventType.METADATA, path, **kw)]
        if choice < 0.72 and self.ns[path] == "FILE":
            return [self._ev(EventType.TRUNCATE, path, timestamp=ts, size=rng.randrange(100))]
        if choice < 0.88:
            parents = [d for d in self._dirs() if d != path and not d.startswith(path + "/")]
            dst = self._new_name(rng.choice(parents))
            for p in [p for p in self.ns if p == path or p.startswith(path + "/")]:
                self.ns[dst + p[len(path):]] = self.ns.pop(p)
            return [self._ev(EventType.RENAME, path, dst_path=dst, timestamp=ts)]
        for p in [p for p in self.ns if p == path or p.startswith(path + "/")]:
            del self.ns[p]
        return [self._ev(EventType.UNLINK, path, timestamp=ts)]

    def run(self, steps: int) -> list[HdfsEvent]:
        for _ in range(steps):
            self.events.extend(self.step())
        return self.events


def chunks(events: list[HdfsEvent], sizes: Iterator[int]) -> list[list[HdfsEvent]]:
    out, i = [], 0
    while i < len(events):
        n = max(1, next(sizes))
        out.append(events[i:i + n])
        i += n
    return out


def with_a_gap(events: list[HdfsEvent], rng: random.Random) -> list[HdfsEvent]:
    """What the agent ships when the NameNode purged events[a:b] before it read them: the
    events before, a GAP record, the listing of the namespace as it stood at the last purged
    txid T (SNAPSHOT records at T, parents first), then the events after T."""
    txids = sorted({e.txid for e in events})
    a, b = sorted(rng.sample(range(1, len(txids) + 1), 2)) if len(txids) > 1 else (1, 1)
    first_lost, last_lost = txids[a - 1], txids[b - 1]
    before = [e for e in events if e.txid < first_lost]
    after = [e for e in events if e.txid > last_lost]
    gap = HdfsEvent(CLUSTER, first_lost, 0, EventType.GAP, "/", gap_end_txid=last_lost + 1)
    state = in_order_state([e for e in events if e.txid <= last_lost], "/data")
    listing = [HdfsEvent(
        CLUSTER, last_lost, i + 1, EventType.SNAPSHOT, path,
        inode_type=INodeType(v["type"]), size=v["size"], mtime=v["mtime"], atime=v["atime"],
        owner=v["owner"], group=v["group"], perms=v["perms"], replication=v["replication"],
        symlink_target=v["symlink_target"]) for i, (path, v) in enumerate(sorted(state.items()))]
    return [*before, gap, *listing, *after]

