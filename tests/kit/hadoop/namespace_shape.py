"""The shape of a large test namespace, as a pure function of its file count.

    for item in walk(1_000_000): ...      # Dir / File / EndDir, depth first, children sorted
    summary(1_000_000)                     # files, dirs, bytes per subtree, without a NameNode

What production trees look like (issue #32): most files in deep date-partitioned trees
(/data/<dataset>/dt=YYYY-MM-DD/hour=HH/part-NNNNN), a fifth of them in three huge flat
directories (a landing zone, a staging area, a log archive), varied owners, groups, modes and
sizes. Everything follows from `files` and SHAPE_VERSION: the kit's cache is keyed by both, and a
test knows what the agent must have indexed without listing HDFS.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass, field

# Bump when anything below changes what walk() yields: the cached images are keyed by it.
SHAPE_VERSION = 1

ROOT_INODE_ID = 16385  # INodeId.ROOT_INODE_ID: Hadoop numbers inodes from here
FIRST_BLOCK_ID = 1073741825  # SequentialBlockIdGenerator.LAST_RESERVED_BLOCK_ID + 1
BLOCK_SIZE = 134_217_728  # dfs.blocksize default
EPOCH_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z, the first dt= partition
PARTS_PER_HOUR = 16
DATASETS = ("clicks", "events", "impressions", "orders", "payments", "sensors", "sessions",
            "users")
SUPERUSER = ("hdfs", "supergroup")
OWNERS = (("etl", "hadoop"), ("analytics", "analysts"), ("ml", "data"), ("ingest", "hadoop"))
# (path, share of all files): 20 % of the files in three directories.
FLAT_DIRS = (("/apps/logs/archive", 0.04), ("/tmp/staging", 0.06), ("/user/etl/landing", 0.10))
FILE_MODES = (0o644, 0o640, 0o600, 0o444)
DIR_MODES = (0o755, 0o750)


@dataclass(frozen=True, slots=True)
class Dir:
    inode: int
    path: str
    owner: str
    group: str
    mode: int
    mtime_ms: int


@dataclass(frozen=True, slots=True)
class File:
    inode: int
    path: str
    owner: str
    group: str
    mode: int
    mtime_ms: int
    size: int


@dataclass(frozen=True, slots=True)
class EndDir:
    """Every child of `inode` came before: their ids, in name order."""
    inode: int
    children: tuple[int, ...]


@dataclass(slots=True)
class Subtree:
    files: int = 0
    dirs: int = 0
    bytes: int = 0


@dataclass(slots=True)
class Summary:
    """What the namespace holds; `subtrees` by path: /data/<dataset> and each flat directory,
    each counting its own directory."""
    files: int = 0
    dirs: int = 0  # the root included
    bytes: int = 0
    subtrees: dict[str, Subtree] = field(default_factory=dict)

    def add(self, item: Dir | File) -> None:
        key = subtree_of(item.path)
        sub = self.subtrees.setdefault(key, Subtree()) if key else None
        for counts in (self, sub) if sub else (self,):
            if isinstance(item, File):
                counts.files += 1
                counts.bytes += item.size
            else:
                counts.dirs += 1


def file_size(i: int) -> int:
    """Sizes from empty to just under two blocks, spread over six orders of magnitude."""
    h = (i * 2_654_435_761) & 0xFFFFFFFF
    if h % 20 == 0:
        return 0
    return min(2 * BLOCK_SIZE - 1, (1 + h % 97) * 10 ** (1 + (h >> 8) % 7))


def _split(files: int) -> tuple[list[tuple[str, int]], list[int]]:
    """Files per flat directory and per dataset (the date trees take what is left)."""
    flat = [(path, int(files * share)) for path, share in FLAT_DIRS]
    rest = files - sum(n for _, n in flat)
    per = [rest // len(DATASETS) + (1 if k < rest % len(DATASETS) else 0)
           for k in range(len(DATASETS))]
    return flat, per


def walk(files: int) -> Iterator[Dir | File | EndDir]:
    """The namespace depth first, each directory's children in name order (Hadoop keeps them
    sorted by their bytes; all names here are ASCII), ending each directory with EndDir."""
    if files < 0:
        raise ValueError(f"files must be >= 0, got {files}")
    flat, per_dataset = _split(files)
    # The tree above the leaves: nested dicts, name -> subtree; a leaf is ("flat", n) or
    # ("dataset", k, n).
    tree: dict[str, object] = {}
    for path, n in flat:
        node = tree
        parts = path.strip("/").split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})  # type: ignore[assignment]
        node[parts[-1]] = ("flat", n)
    data: dict[str, object] = tree.setdefault("data", {})  # type: ignore[assignment]
    for k, name in enumerate(DATASETS):
        data[name] = ("dataset", k, per_dataset[k])
    counter = _Counter()
    yield from _walk_dir(counter, "", tree, SUPERUSER, ROOT_INODE_ID)


class _Counter:
    def __init__(self) -> None:
        self.next_inode = ROOT_INODE_ID + 1
        self.file_index = 0

    def inode(self) -> int:
        self.next_inode += 1
        return self.next_inode - 1

    def file(self) -> int:
        self.file_index += 1
        return self.file_index - 1


def _walk_dir(c: _Counter, path: str, tree: dict[str, object], owner: tuple[str, str],
              inode: int) -> Iterator[Dir | File | EndDir]:
    yield Dir(inode, path or "/", owner[0], owner[1], 0o755, EPOCH_MS)
    children = []
    for name in sorted(tree):
        child = tree[name]
        child_path = f"{path}/{name}"
        child_inode = c.inode()
        children.append(child_inode)
        if isinstance(child, dict):
            yield from _walk_dir(c, child_path, child, owner, child_inode)
        elif child[0] == "flat":
            yield from _walk_flat(c, child_path, int(child[1]), child_inode)  # type: ignore[arg-type]
        else:
            _, k, n = child  # type: ignore[misc]
            yield from _walk_dataset(c, child_path, k, n, child_inode)
    yield EndDir(inode, tuple(children))


def _walk_flat(c: _Counter, path: str, n: int, inode: int) -> Iterator[Dir | File | EndDir]:
    owner, group = OWNERS[len(path) % len(OWNERS)]
    yield Dir(inode, path, owner, group, 0o777 if path.startswith("/tmp") else 0o755, EPOCH_MS)
    first = c.next_inode
    for j in range(n):
        i = c.file()
        # Flat directories fill over a month: one file every ~2.6 s at 1M files.
        yield File(c.inode(), f"{path}/f-{j:08d}", *OWNERS[i % len(OWNERS)],
                   FILE_MODES[i % len(FILE_MODES)], EPOCH_MS + j * 2_600, file_size(i))
    yield EndDir(inode, tuple(range(first, c.next_inode)))


def _walk_dataset(c: _Counter, path: str, k: int, n: int, inode: int
                  ) -> Iterator[Dir | File | EndDir]:
    owner, group = OWNERS[k % len(OWNERS)]
    mode = DIR_MODES[k % len(DIR_MODES)]
    yield Dir(inode, path, owner, group, mode, EPOCH_MS)
    hours = -(-n // PARTS_PER_HOUR)
    days = -(-hours // 24)
    day_ids = []
    for day in range(days):
        day_inode = c.inode()
        day_ids.append(day_inode)
        day_ms = EPOCH_MS + day * 86_400_000
        day_path = f"{path}/dt={_date(day)}"
        yield Dir(day_inode, day_path, owner, group, mode, day_ms + 86_399_000)
        hour_ids = []
        for hour in range(min(24, hours - day * 24)):
            hour_inode = c.inode()
            hour_ids.append(hour_inode)
            hour_ms = day_ms + hour * 3_600_000
            hour_path = f"{day_path}/hour={hour:02d}"
            yield Dir(hour_inode, hour_path, owner, group, mode, hour_ms + 3_599_000)
            first = c.next_inode
            done = (day * 24 + hour) * PARTS_PER_HOUR
            for part in range(min(PARTS_PER_HOUR, n - done)):
                i = c.file()
                yield File(c.inode(), f"{hour_path}/part-{part:05d}", owner, group,
                           FILE_MODES[(i >> 3) % len(FILE_MODES)], hour_ms + part * 1_000,
                           file_size(i))
            yield EndDir(hour_inode, tuple(range(first, c.next_inode)))
        yield EndDir(day_inode, tuple(hour_ids))
    yield EndDir(inode, tuple(day_ids))


def _date(day: int) -> str:
    """YYYY-MM-DD of 2024-01-01 + day."""
    return (datetime.date(2024, 1, 1) + datetime.timedelta(days=day)).isoformat()


def subtree_of(path: str) -> str | None:
    """The summary's subtree a path belongs to."""
    for flat, _ in FLAT_DIRS:
        if path == flat or path.startswith(flat + "/"):
            return flat
    parts = path.split("/")
    if len(parts) >= 3 and parts[1] == "data":
        return "/".join(parts[:3])
    return None


def summary(files: int) -> Summary:
    """Counts of walk(files), computed by walking it (no NameNode): a few seconds per 1M."""
    out = Summary()
    for item in walk(files):
        if not isinstance(item, EndDir):
            out.add(item)
    return out
