"""A namespace whose directory operations are larger than a chunk can list (issue 32, item 4):
one tree of `groups x dirs` directories of `files` files each, plus a hot directory (more
child writes in one chunk than index_view.SHARD_AFTER_WRITES: its children are sharded),
renamed three times, a subtree of it deleted and created again, and a chain of renames of one
of its directories (a RENAME of a directory over the listing budget ends its chunk, so each
link of the chain is applied in a chunk of its own). Events as the agent ships them: one per
txid, in order."""

from __future__ import annotations

from dataclasses import dataclass, field

from hdfs_events.event import EventType, HdfsEvent, INodeType

T0 = 1_700_000_000_000
HOT_FILES = 150  # children of the hot directory, created one after another


@dataclass
class BigRenames:
    cluster: str = "prod"
    root: str = "/data"
    txid: int = 100
    events: list[HdfsEvent] = field(default_factory=list)

    def add(self, type_: EventType, path: str, **kw: object) -> None:
        self.txid += 1
        self.events.append(HdfsEvent(cluster=self.cluster, txid=self.txid, index=0,
                                     type=type_, path=path, timestamp=T0 + self.txid,
                                     **kw))  # type: ignore[arg-type]

    def mkdir(self, path: str) -> None:
        self.add(EventType.CREATE, path, inode_type=INodeType.DIRECTORY, ctime=T0,
                 owner="etl", group="etl", perms="0755")

    def file(self, path: str, size: int) -> None:
        self.add(EventType.CREATE, path, inode_type=INodeType.FILE, ctime=T0, owner="etl",
                 group="etl", perms="0644", replication=3)
        self.add(EventType.CLOSE, path, size=size)

    def rename(self, src: str, dst: str) -> None:
        self.add(EventType.RENAME, src, dst_path=dst)

    def tree(self, top: str, groups: int, dirs: int, files: int) -> None:
        """top/gNN/dNNN/fNNN: three levels of directories, the files at the bottom."""
        self.mkdir(top)
        for g in range(groups):
            self.mkdir(f"{top}/g{g:02d}")
            for d in range(dirs):
                self.mkdir(f"{top}/g{g:02d}/d{d:03d}")
                for f in range(files):
                    self.file(f"{top}/g{g:02d}/d{d:03d}/f{f:03d}", size=f)


def big_renames(groups: int, dirs: int, files: int, *, hot_files: int = HOT_FILES,
                cluster: str = "prod", root: str = "/data") -> list[HdfsEvent]:
    """A tree of groups x dirs x files files, groups x (dirs + 1) + 2 directories and a hot
    directory of `hot_files`, and what happens to it."""
    log = BigRenames(cluster=cluster, root=root)
    log.mkdir(root)
    t = f"{root}/t"
    log.tree(t, groups, dirs, files)
    log.mkdir(f"{t}/hot")
    for f in range(hot_files):
        log.file(f"{t}/hot/h{f:04d}", size=f)
    log.rename(t, f"{root}/t1")
    # A subtree deleted, then created again under the same name, smaller.
    log.add(EventType.UNLINK, f"{root}/t1/g00")
    log.tree(f"{root}/t1/g00", 1, 2, 3)
    log.rename(f"{root}/t1", f"{root}/t2")
    # A chain: one group moved out, on, and back in under a new name; each link a walk.
    log.rename(f"{root}/t2/g01", f"{root}/x")
    log.rename(f"{root}/x", f"{root}/y")
    log.file(f"{root}/y/d000/late", size=7)
    log.rename(f"{root}/y", f"{root}/t2/g99")
    log.rename(f"{root}/t2", f"{root}/t3")
    log.file(f"{root}/t3/g99/d001/later", size=8)
    return log.events
