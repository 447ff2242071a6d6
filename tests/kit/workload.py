"""Realistic `hdfs oev -p xml` edit logs of any size, written in constant memory.

Python API (other benches and tests call this):

    from tests.kit.workload import write_edit_log, WorkloadSummary

    summary = write_edit_log(
        "bench-out/edits.xml",        # a path, or an open text stream
        ops=1_000_000,                # exact number of RECORDs written
        seed=0,                       # same seed, same bytes
        start_txid=1,                 # txid of the first record (consecutive after it)
        start_ms=DEFAULT_START_MS,    # NameNode clock of the first op, epoch ms
        mass_delete=0,                # N OP_DELETEs by one client under one prefix, in a burst
        users=DEFAULT_USERS,          # users that own datasets and run chmod/chown
        datasets=64,                  # how many /data/<team>/<dataset> trees, or their paths
    )
    summary.ops, summary.first_txid, summary.last_txid   # records written
    summary.events            # events Hadoop's translator yields for them (exact)
    summary.opcodes           # {"OP_ADD_BLOCK": ..., ...}
    summary.mass_delete       # MassDelete(prefix, first_txid, last_txid, count) or None

    python -m tests.kit.workload OUT.xml --ops N [--seed S] [--mass-delete N] [--start-txid T]

What the log looks like (field names and order as Hadoop 3's FSEditLogOp.toXml writes them):
- Jobs write partitions of datasets `/data/<team>/<dataset>/dt=YYYY-MM-DD/part-NNNNN-...`:
  MKDIR the task attempt dir under `_temporary`, OP_ADD each part file there, then per block
  OP_ALLOCATE_BLOCK_ID, OP_SET_GENSTAMP_V2, OP_ADD_BLOCK (sometimes OP_UPDATE_BLOCKS on hflush),
  OP_CLOSE with every BLOCK's NUM_BYTES, OP_RENAME_OLD to the final name (FileSystem.rename logs
  the old rename op), OP_DELETE of `_temporary`, and a zero-length `_SUCCESS`. Streaming writers
  instead create `.part-N.tmp` and rename it. Writers interleave as on a busy NameNode, so
  block ops dominate (about two thirds of records).
- Around them: appends (OP_APPEND, reopened block, OP_CLOSE), retention deletes of old
  partitions, chmod/chown/setrep/touch (OP_SET_PERMISSIONS, OP_SET_OWNER, OP_SET_REPLICATION,
  OP_TIMES), occasional OP_CONCAT_DELETE, OP_TRUNCATE, OP_SET_XATTR, OP_SET_ACL, and scratch
  files under /user with spaces, non-ASCII, '&' and backslashes (which oev mangles as "\\005c;").
- `mass_delete=N`: N consecutive OP_DELETEs of files under one dataset, one RPC client id,
  a few ms apart, halfway through the log (edit logs do not record the user; the client id
  is what one `hdfs dfs -rm` leaves behind).
Timestamps increase with the txid; txids are consecutive; the log starts with
OP_START_LOG_SEGMENT and ends with OP_END_LOG_SEGMENT, like a finalized segment.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

DEFAULT_START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
DEFAULT_USERS = ("etl", "spark", "hive", "svc-ingest", "alice", "bob", "chen", "dana")
TEAMS = ("ads", "finance", "growth", "logistics", "ml", "risk", "search", "support")
_NOUNS = ("clicks", "orders", "sessions", "payments", "events", "impressions", "users",
          "shipments", "features", "tickets", "invoices", "queries", "devices", "refunds")
EDITS_VERSION = -66  # Hadoop 3.3's NameNode layout
BLOCK_SIZE = 134_217_728
REPLICATION_POLICY_ID = 0
RS_6_3_POLICY_ID = 1  # SystemErasureCodingPolicies.RS_6_3_POLICY_ID
# Events Hadoop's InotifyFSEditLogOpTranslator yields per op (OP_CONCAT_DELETE: 2 + sources).
_ONE_EVENT = frozenset({
    "OP_ADD", "OP_CLOSE", "OP_APPEND", "OP_RENAME_OLD", "OP_RENAME", "OP_DELETE", "OP_MKDIR",
    "OP_SYMLINK", "OP_SET_REPLICATION", "OP_SET_PERMISSIONS", "OP_SET_OWNER", "OP_TIMES",
    "OP_SET_XATTR", "OP_REMOVE_XATTR", "OP_SET_ACL", "OP_TRUNCATE",
})


@dataclass(frozen=True, slots=True)
class MassDelete:
    prefix: str
    first_txid: int
    last_txid: int
    count: int


@dataclass(frozen=True, slots=True)
class WorkloadSummary:
    ops: int
    first_txid: int
    last_txid: int
    events: int
    opcodes: dict[str, int]
    mass_delete: MassDelete | None


# One op as a session yields it: (opcode, DATA children after TXID, events it yields).
Op = tuple[str, str, int]


def mangle(text: str) -> str:
    """Text as oev writes it: XML-escaped, and what XML cannot carry mangled the way Hadoop's
    XMLUtils.mangleXmlString does ("\\" + 4 hex digits + ";"), backslash included."""
    if text.isascii() and text.isprintable() and not any(c in text for c in "&<>\\"):
        return text
    out = []
    for ch in text:
        cp = ord(ch)
        if (cp < 0x20 and ch not in "\t\n\r") or 0xD800 <= cp <= 0xDFFF or cp in (
                0xFFFE, 0xFFFF, 0x5C):
            out.append(f"\\{cp:04x};")
        elif ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        else:
            out.append(ch)
    return "".join(out)


class _Clock:
    __slots__ = ("ms",)

    def __init__(self, ms: int) -> None:
        self.ms = ms


class _Generator:
    """The state shared by every session: rng, clock, inode/block/genstamp counters."""

    def __init__(self, *, seed: int, start_ms: int, users: Sequence[str],
                 datasets: int | Sequence[str]) -> None:
        self.rng = random.Random(seed)
        self.clock = _Clock(start_ms)
        self.inode = 16_386
        self.block_id = 1_073_741_825
        self.genstamp = 1_001
        self.users = tuple(users)
        if not self.users:
            raise ValueError("users must name at least one user")
        if isinstance(datasets, int):
            if datasets < 1:
                raise ValueError("datasets must be >= 1")
            names = []
            for i in range(datasets):
                team = TEAMS[i % len(TEAMS)]
                noun = _NOUNS[(i // len(TEAMS)) % len(_NOUNS)]
                gen = i // (len(TEAMS) * len(_NOUNS))
                names.append(f"/data/{team}/{noun}" + (f"_v{gen + 1}" if gen else ""))
            self.datasets = tuple(names)
        else:
            self.datasets = tuple(d.rstrip("/") for d in datasets)
            if not self.datasets:
                raise ValueError("datasets must name at least one prefix")
        rng = self.rng
        # Each dataset: owner, group, erasure-coding policy (archives use RS-6-3).
        self.owner = {d: rng.choice(self.users) for d in self.datasets}
        self.ec = {d: RS_6_3_POLICY_ID if rng.random() < 0.1 else REPLICATION_POLICY_ID
                   for d in self.datasets}
        self.job_seq = rng.randrange(1000, 9000)

    # --- small helpers -----------------------------------------------------------------
    def next_inode(self) -> int:
        self.inode += 1
        return self.inode

    def client_id(self) -> str:
        b = self.rng.getrandbits(128)
        h = f"{b:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def group_of(self, dataset: str) -> str:
        parts = dataset.split("/")
        return parts[2] if len(parts) > 2 and parts[2] else "hadoop"

    def day(self, back: int = 0) -> str:
        days = (self.clock.ms - DEFAULT_START_MS) // 86_400_000 - back
        y, m, d = _civil_from_days(20_454 + days)  # 20454 = days from 1970 to 2026-01-01
        return f"{y:04d}-{m:02d}-{d:02d}"

    # --- XML fragments, in toXml's field order --------------------------------------------
    @staticmethod
    def perm_xml(user: str, group: str, mode: int) -> str:
        return (f"<PERMISSION_STATUS><USERNAME>{mangle(user)}</USERNAME>"
                f"<GROUPNAME>{mangle(group)}</GROUPNAME><MODE>{mode}</MODE>"
                "</PERMISSION_STATUS>")

    @staticmethod
    def block_xml(block_id: int, num_bytes: int, genstamp: int) -> str:
        return (f"<BLOCK><BLOCK_ID>{block_id}</BLOCK_ID><NUM_BYTES>{num_bytes}</NUM_BYTES>"
                f"<GENSTAMP>{genstamp}</GENSTAMP></BLOCK>")

    @staticmethod
    def rpc_xml(client_id: str, call_id: int) -> str:
        return f"<RPC_CLIENTID>{client_id}</RPC_CLIENTID><RPC_CALLID>{call_id}</RPC_CALLID>"

    # --- sessions: generators of ops ----------------------------------------------------------
    def write_file(self, path: str, user: str, group: str, client: str, rpc: list,
                   *, size: int, ec_policy: int, replication: int = 3,
                   hflush: bool = False) -> Iterator[Op]:
        """OP_ADD, per block ALLOCATE/GENSTAMP/ADD_BLOCK, OP_CLOSE with the block sizes."""
        p = mangle(path)
        now = self.clock.ms
        rpc[1] += 1
        yield ("OP_ADD",
               f"<LENGTH>0</LENGTH><INODEID>{self.next_inode()}</INODEID><PATH>{p}</PATH>"
               f"<REPLICATION>{replication}</REPLICATION><MTIME>{now}</MTIME>"
               f"<ATIME>{now}</ATIME><BLOCKSIZE>{BLOCK_SIZE}</BLOCKSIZE>"
               f"<CLIENT_NAME>{client}</CLIENT_NAME><CLIENT_MACHINE>10.20.{len(user)}.7"
               f"</CLIENT_MACHINE><OVERWRITE>{'true' if self.rng.random() < 0.7 else 'false'}"
               f"</OVERWRITE>{self.perm_xml(user, group, 0o644)}"
               f"<ERASURE_CODING_POLICY_ID>{ec_policy}</ERASURE_CODING_POLICY_ID>"
               f"{self.rpc_xml(rpc[0], rpc[1])}", 1)
        blocks: list[tuple[int, int, int]] = []
        remaining = size
        while remaining > 0:
            self.block_id += 1
            self.genstamp += 1
            bid, gs = self.block_id, self.genstamp
            yield ("OP_ALLOCATE_BLOCK_ID", f"<BLOCK_ID>{bid}</BLOCK_ID>", 0)
            yield ("OP_SET_GENSTAMP_V2", f"<GENSTAMPV2>{gs}</GENSTAMPV2>", 0)
            penultimate = ""
            if blocks:
                pb = blocks[-1]
                penultimate = self.block_xml(*pb)
            yield ("OP_ADD_BLOCK",
                   f"<PATH>{p}</PATH>{penultimate}{self.block_xml(bid, 0, gs)}"
                   "<RPC_CLIENTID></RPC_CLIENTID><RPC_CALLID>-2</RPC_CALLID>", 0)
            n = min(remaining, BLOCK_SIZE)
            remaining -= n
            blocks.append((bid, n, gs))
            if hflush and self.rng.random() < 0.5:
                yield ("OP_UPDATE_BLOCKS",
                       f"<PATH>{p}</PATH>{self.block_xml(bid, n // 2, gs)}"
                       "<RPC_CLIENTID></RPC_CLIENTID><RPC_CALLID>-2</RPC_CALLID>", 0)
        yield ("OP_CLOSE", self.close_body(p, now, user, group, blocks, replication), 1)

    def close_body(self, p: str, atime: int, user: str, group: str,
                   blocks: list[tuple[int, int, int]], replication: int) -> str:
        return (f"<LENGTH>0</LENGTH><INODEID>0</INODEID><PATH>{p}</PATH>"
                f"<REPLICATION>{replication}</REPLICATION><MTIME>{self.clock.ms}</MTIME>"
                f"<ATIME>{atime}</ATIME><BLOCKSIZE>{BLOCK_SIZE}</BLOCKSIZE>"
                "<CLIENT_NAME></CLIENT_NAME><CLIENT_MACHINE></CLIENT_MACHINE>"
                "<OVERWRITE>false</OVERWRITE>"
                + "".join(self.block_xml(*b) for b in blocks)
                + self.perm_xml(user, group, 0o644))

    def file_size(self) -> int:
        # Mostly one or two blocks, a tail of large files; some tiny ones.
        r = self.rng.random()
        if r < 0.15:
            return self.rng.randrange(1, 4096)
        return int(self.rng.lognormvariate(19.2, 1.0))

    def rename_old(self, src: str, dst: str, rpc: list) -> Op:
        rpc[1] += 1
        return ("OP_RENAME_OLD",
                f"<LENGTH>0</LENGTH><SRC>{mangle(src)}</SRC><DST>{mangle(dst)}</DST>"
                f"<TIMESTAMP>{self.clock.ms}</TIMESTAMP>{self.rpc_xml(rpc[0], rpc[1])}", 1)

    def delete(self, path: str, rpc: list) -> Op:
        rpc[1] += 1
        return ("OP_DELETE",
                f"<LENGTH>0</LENGTH><PATH>{mangle(path)}</PATH>"
                f"<TIMESTAMP>{self.clock.ms}</TIMESTAMP>{self.rpc_xml(rpc[0], rpc[1])}", 1)

    def mkdir(self, path: str, user: str, group: str, mode: int = 0o755) -> Op:
        return ("OP_MKDIR",
                f"<LENGTH>0</LENGTH><INODEID>{self.next_inode()}</INODEID>"
                f"<PATH>{mangle(path)}</PATH><TIMESTAMP>{self.clock.ms}</TIMESTAMP>"
                f"{self.perm_xml(user, group, mode)}", 1)

    def job(self) -> Iterator[Op]:
        """A batch job committing one partition through _temporary (FileOutputCommitter v1)."""
        rng = self.rng
        ds = rng.choice(self.datasets)
        user, group = self.owner[ds], self.group_of(ds)
        self.job_seq += 1
        job = f"job_{self.clock.ms // 1000}_{self.job_seq:04d}"
        rpc = [self.client_id(), 0]
        day = self.day(rng.randrange(0, 2))
        final_dir = f"{ds}/dt={day}"
        tmp_root = f"{ds}/_temporary"
        yield self.mkdir(f"{tmp_root}/0", user, group)
        tasks = rng.randrange(1, 9)
        for t in range(tasks):
            attempt = f"attempt_{job[4:]}_m_{t:06d}_0"
            adir = f"{tmp_root}/0/_temporary/{attempt}"
            yield self.mkdir(adir, user, group)
            client = f"DFSClient_{attempt}_{rng.randrange(10**9)}_1"
            part = f"part-{t:05d}-{rng.getrandbits(32):08x}.snappy.parquet"
            yield from self.write_file(f"{adir}/{part}", user, group, client, rpc,
                                       size=self.file_size(), ec_policy=self.ec[ds])
            yield self.rename_old(f"{adir}/{part}", f"{final_dir}/{part}", rpc)
        yield self.delete(tmp_root, rpc)
        yield from self.write_file(f"{final_dir}/_SUCCESS", user, group,
                                   f"DFSClient_NONMAPREDUCE_{rng.randrange(10**9)}_1", rpc,
                                   size=0, ec_policy=self.ec[ds])

    def stream_writer(self) -> Iterator[Op]:
        """A streaming sink: writes `.part-N.tmp` with hflushes, renames it into place."""
        rng = self.rng
        ds = rng.choice(self.datasets)
        user, group = self.owner[ds], self.group_of(ds)
        rpc = [self.client_id(), 0]
        final_dir = f"{ds}/dt={self.day()}"
        client = f"DFSClient_NONMAPREDUCE_{rng.randrange(10**9)}_1"
        for _ in range(rng.randrange(1, 4)):
            n = rng.randrange(100_000)
            tmp = f"{final_dir}/.part-{n:05d}.tmp"
            yield from self.write_file(tmp, user, group, client, rpc, size=self.file_size(),
                                       ec_policy=REPLICATION_POLICY_ID, hflush=True)
            if rng.random() < 0.8:
                yield self.rename_old(tmp, f"{final_dir}/part-{n:05d}", rpc)
            else:  # FileContext.rename(..., OVERWRITE) logs the newer OP_RENAME
                rpc[1] += 1
                yield ("OP_RENAME",
                       f"<LENGTH>0</LENGTH><SRC>{mangle(tmp)}</SRC>"
                       f"<DST>{mangle(f'{final_dir}/part-{n:05d}')}</DST>"
                       f"<TIMESTAMP>{self.clock.ms}</TIMESTAMP><OPTIONS>OVERWRITE</OPTIONS>"
                       f"{self.rpc_xml(rpc[0], rpc[1])}", 1)

    def appender(self) -> Iterator[Op]:
        """hdfs dfs -appendToFile on a log: OP_APPEND, reopened last block, OP_CLOSE."""
        rng = self.rng
        ds = rng.choice(self.datasets)
        user, group = self.owner[ds], self.group_of(ds)
        path = f"{ds}/logs/app-{rng.randrange(50):02d}.log"
        p = mangle(path)
        rpc = [self.client_id(), 1]
        client = f"DFSClient_NONMAPREDUCE_{rng.randrange(10**9)}_1"
        new_block = rng.random() < 0.3
        yield ("OP_APPEND",
               f"<PATH>{p}</PATH><CLIENT_NAME>{client}</CLIENT_NAME>"
               f"<CLIENT_MACHINE>10.20.1.9</CLIENT_MACHINE>"
               f"<NEWBLOCK>{'true' if new_block else 'false'}</NEWBLOCK>"
               f"{self.rpc_xml(rpc[0], rpc[1])}", 1)
        self.block_id += 1
        self.genstamp += 1
        bid, gs = self.block_id, self.genstamp
        old = (bid - 1_000_000, rng.randrange(1, BLOCK_SIZE), gs - 500)
        if new_block:
            yield ("OP_ALLOCATE_BLOCK_ID", f"<BLOCK_ID>{bid}</BLOCK_ID>", 0)
            yield ("OP_SET_GENSTAMP_V2", f"<GENSTAMPV2>{gs}</GENSTAMPV2>", 0)
            yield ("OP_ADD_BLOCK",
                   f"<PATH>{p}</PATH>{self.block_xml(*old)}{self.block_xml(bid, 0, gs)}"
                   "<RPC_CLIENTID></RPC_CLIENTID><RPC_CALLID>-2</RPC_CALLID>", 0)
            blocks = [old, (bid, rng.randrange(1, 1 << 20), gs)]
        else:  # the last block is reopened under a new generation stamp
            yield ("OP_SET_GENSTAMP_V2", f"<GENSTAMPV2>{gs}</GENSTAMPV2>", 0)
            grown = (old[0], old[1] + rng.randrange(1, 1 << 20), gs)
            yield ("OP_UPDATE_BLOCKS",
                   f"<PATH>{p}</PATH>{self.block_xml(*grown)}"
                   "<RPC_CLIENTID></RPC_CLIENTID><RPC_CALLID>-2</RPC_CALLID>", 0)
            blocks = [grown]
        yield ("OP_CLOSE", self.close_body(p, self.clock.ms - 5, user, group, blocks, 3), 1)

    def maintenance(self) -> Iterator[Op]:
        """One-off namespace changes: chmod, chown, setrep, touch, retention delete, mkdir."""
        rng = self.rng
        ds = rng.choice(self.datasets)
        user, group = self.owner[ds], self.group_of(ds)
        target = f"{ds}/dt={self.day(rng.randrange(1, 30))}"
        r = rng.random()
        rpc = [self.client_id(), 0]
        if r < 0.25:
            yield ("OP_SET_PERMISSIONS",
                   f"<SRC>{mangle(target)}</SRC><MODE>{rng.choice((0o750, 0o755, 0o770, 0o1777))}"
                   "</MODE>", 1)
        elif r < 0.45:
            who = rng.random()
            body = f"<SRC>{mangle(target)}</SRC>"
            if who < 0.6:
                body += (f"<USERNAME>{mangle(rng.choice(self.users))}</USERNAME>"
                         f"<GROUPNAME>{mangle(group)}</GROUPNAME>")
            elif who < 0.8:
                body += f"<USERNAME>{mangle(rng.choice(self.users))}</USERNAME>"
            else:
                body += f"<GROUPNAME>{mangle(rng.choice(TEAMS))}</GROUPNAME>"
            yield ("OP_SET_OWNER", body, 1)
        elif r < 0.6:
            yield ("OP_TIMES",
                   f"<LENGTH>0</LENGTH><PATH>{mangle(target)}/part-00000</PATH>"
                   f"<MTIME>{self.clock.ms}</MTIME><ATIME>-1</ATIME>", 1)
        elif r < 0.7:
            yield ("OP_SET_REPLICATION",
                   f"<PATH>{mangle(target)}/part-00000</PATH>"
                   f"<REPLICATION>{rng.choice((2, 3, 5))}</REPLICATION>", 1)
        elif r < 0.9:
            yield self.delete(f"{ds}/dt={self.day(rng.randrange(90, 400))}", rpc)
        else:
            yield self.mkdir(f"{ds}/dt={self.day()}", user, group)

    def rare(self) -> Iterator[Op]:
        """Concat, truncate, xattrs, ACLs, and scratch files with awkward names."""
        rng = self.rng
        ds = rng.choice(self.datasets)
        user, group = self.owner[ds], self.group_of(ds)
        rpc = [self.client_id(), 0]
        r = rng.random()
        client = f"DFSClient_NONMAPREDUCE_{rng.randrange(10**9)}_1"
        if r < 0.25:
            base = f"{ds}/compact/{rng.getrandbits(24):06x}"
            n = rng.randrange(2, 5)
            for i in range(n + 1):
                yield from self.write_file(f"{base}/f{i}", user, group, client, rpc,
                                           size=rng.randrange(1, 1 << 20), ec_policy=0)
            rpc[1] += 1
            sources = "".join(f"<SOURCE{i}>{mangle(f'{base}/f{i}')}</SOURCE{i}>"
                              for i in range(1, n + 1))
            yield ("OP_CONCAT_DELETE",
                   f"<LENGTH>0</LENGTH><TRG>{mangle(base)}/f0</TRG>"
                   f"<TIMESTAMP>{self.clock.ms}</TIMESTAMP><SOURCES>{sources}</SOURCES>"
                   f"{self.rpc_xml(rpc[0], rpc[1])}", 2 + n)
        elif r < 0.35:
            yield ("OP_TRUNCATE",
                   f"<SRC>{mangle(ds)}/logs/app-{rng.randrange(50):02d}.log</SRC>"
                   f"<CLIENTNAME>{client}</CLIENTNAME><CLIENTMACHINE>10.20.1.9</CLIENTMACHINE>"
                   f"<NEWLENGTH>{rng.randrange(1 << 20)}</NEWLENGTH>"
                   f"<TIMESTAMP>{self.clock.ms}</TIMESTAMP>", 1)
        elif r < 0.5:
            value = rng.getrandbits(48)
            yield ("OP_SET_XATTR",
                   f"<SRC>{mangle(ds)}</SRC><XATTR><NAMESPACE>USER</NAMESPACE>"
                   f"<NAME>lineage.run</NAME><VALUE>0x{value:012x}</VALUE></XATTR>"
                   f"{self.rpc_xml(rpc[0], 1)}", 1)
        elif r < 0.6:
            other = rng.choice(self.users)
            yield ("OP_SET_ACL",
                   f"<SRC>{mangle(ds)}</SRC>"
                   "<ENTRY><SCOPE>ACCESS</SCOPE><TYPE>USER</TYPE><PERM>rwx</PERM></ENTRY>"
                   f"<ENTRY><SCOPE>ACCESS</SCOPE><TYPE>USER</TYPE><NAME>{mangle(other)}</NAME>"
                   "<PERM>r-x</PERM></ENTRY>"
                   "<ENTRY><SCOPE>ACCESS</SCOPE><TYPE>GROUP</TYPE><PERM>r-x</PERM></ENTRY>"
                   "<ENTRY><SCOPE>ACCESS</SCOPE><TYPE>MASK</TYPE><PERM>r-x</PERM></ENTRY>"
                   "<ENTRY><SCOPE>ACCESS</SCOPE><TYPE>OTHER</TYPE><PERM>---</PERM></ENTRY>"
                   f"<ENTRY><SCOPE>DEFAULT</SCOPE><TYPE>GROUP</TYPE><NAME>{mangle(group)}"
                   "</NAME><PERM>r-x</PERM></ENTRY>", 1)
        else:
            who = rng.choice(self.users)
            name = rng.choice(("report 2026 (final).csv", "Übersicht_März.xlsx", "R&D <draft>.txt",
                               "C:\\Users\\export.csv", "données.json", "売上.parquet"))
            path = f"/user/{who}/scratch/{name}"
            yield from self.write_file(path, who, who, client, rpc,
                                       size=rng.randrange(1, 1 << 16), ec_policy=0)
            if rng.random() < 0.5:
                yield self.delete(path, rpc)

    def mass_delete_ops(self, count: int) -> tuple[str, Iterator[Op]]:
        ds = self.rng.choice(self.datasets)
        day = self.day(400)
        prefix = f"{ds}/dt={day}"
        rpc = [self.client_id(), 0]

        def ops() -> Iterator[Op]:
            for i in range(count):
                yield self.delete(f"{prefix}/part-{i:05d}-{i * 7919 % 65536:04x}.snappy.parquet",
                                  rpc)

        return prefix, ops()


_TOKEN = re.compile(r"<([A-Z0-9_]+)>([^<]*)</\1>|<([A-Z0-9_]+)>|</([A-Z0-9_]+)>")
_INDENT = tuple("\n" + "  " * depth for depth in range(12))


def _pretty(body: str, depth: int = 3) -> str:
    """A compact DATA body laid out as oev lays it out: one element a line, two-space indent."""
    out = []
    for m in _TOKEN.finditer(body):
        leaf, text, opening, closing = m.groups()
        if leaf is not None:
            out.append(f"{_INDENT[depth]}<{leaf}>{text}</{leaf}>")
        elif opening is not None:
            out.append(f"{_INDENT[depth]}<{opening}>")
            depth += 1
        else:
            depth -= 1
            out.append(f"{_INDENT[depth]}</{closing}>")
    return "".join(out)


def _civil_from_days(z: int) -> tuple[int, int, int]:
    # Howard Hinnant's days -> (y, m, d): avoids datetime objects per op on the hot path.
    z += 719_468
    era = (z if z >= 0 else z - 146_096) // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + (m <= 2), m, d)


_SESSION_WEIGHTS = (("job", 62), ("stream_writer", 14), ("maintenance", 14), ("appender", 7),
                    ("rare", 3))
_CONCURRENT_SESSIONS = 24  # writers in flight at once: their ops interleave


def write_edit_log(
    out: str | Path | TextIO,
    *,
    ops: int,
    seed: int = 0,
    start_txid: int = 1,
    start_ms: int = DEFAULT_START_MS,
    mass_delete: int = 0,
    users: Sequence[str] = DEFAULT_USERS,
    datasets: int | Sequence[str] = 64,
    edits_version: int = EDITS_VERSION,
) -> WorkloadSummary:
    """Writes an oev XML edit log of exactly `ops` records; see the module docstring."""
    if ops < 2:
        raise ValueError("ops must be >= 2 (the log starts and ends a segment)")
    if mass_delete < 0 or mass_delete > ops - 2:
        raise ValueError(f"mass_delete must be between 0 and ops - 2 ({ops - 2})")
    if start_txid < 1:
        raise ValueError("start_txid must be >= 1")
    gen = _Generator(seed=seed, start_ms=start_ms, users=users, datasets=datasets)
    rng, clock = gen.rng, gen.clock
    names, weights = zip(*_SESSION_WEIGHTS, strict=True)
    opcodes: Counter[str] = Counter()
    events = 0
    txid = start_txid
    mass: MassDelete | None = None
    mass_at = start_txid + 1 + (ops - 2 - mass_delete) // 2 if mass_delete else -1

    def new_session() -> Iterator[Op]:
        return getattr(gen, rng.choices(names, weights)[0])()

    sessions = [new_session() for _ in range(_CONCURRENT_SESSIONS)]
    last_txid = start_txid + ops - 1
    ctx = open(out, "w", encoding="utf-8", newline="\n") if isinstance(  # noqa: SIM115
        out, (str, Path)) else nullcontext(out)
    with ctx as f:
        write = f.write
        write(f'<?xml version="1.0" encoding="UTF-8"?>\n<EDITS>\n'
              f"  <EDITS_VERSION>{edits_version}</EDITS_VERSION>\n")
        buf: list[str] = []

        def record(opcode: str, body: str) -> None:
            buf.append(f"  <RECORD>\n    <OPCODE>{opcode}</OPCODE>\n    <DATA>\n"
                       f"      <TXID>{txid}</TXID>{_pretty(body)}\n    </DATA>\n  </RECORD>\n")
            opcodes[opcode] += 1

        record("OP_START_LOG_SEGMENT", "")
        txid += 1
        while txid < last_txid:
            if txid == mass_at:
                prefix, burst = gen.mass_delete_ops(mass_delete)
                first = txid
                for opcode, body, n in burst:
                    clock.ms += rng.randrange(1, 4)
                    record(opcode, body)
                    events += n
                    txid += 1
                mass = MassDelete(prefix, first, txid - 1, mass_delete)
                continue
            i = rng.randrange(_CONCURRENT_SESSIONS)
            try:
                opcode, body, n = next(sessions[i])
            except StopIteration:
                sessions[i] = new_session()
                continue
            # ~600 ops/s on average, as a busy NameNode logs them.
            clock.ms += int(rng.expovariate(0.6)) + (0 if rng.random() < 0.7 else 1)
            record(opcode, body)
            events += n
            txid += 1
            if len(buf) >= 4096:
                write("".join(buf))
                buf.clear()
        record("OP_END_LOG_SEGMENT", "")
        write("".join(buf))
        write("</EDITS>\n")
    return WorkloadSummary(ops=ops, first_txid=start_txid, last_txid=last_txid, events=events,
                           opcodes=dict(opcodes), mass_delete=mass)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.kit.workload",
                                     description="Write a realistic `hdfs oev -p xml` edit log.")
    parser.add_argument("out", help="output file (- for stdout)")
    parser.add_argument("--ops", type=int, required=True, help="number of records")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start-txid", type=int, default=1)
    parser.add_argument("--start-ms", type=int, default=DEFAULT_START_MS)
    parser.add_argument("--mass-delete", type=int, default=0, metavar="N",
                        help="N OP_DELETEs by one client under one prefix, in a burst")
    parser.add_argument("--datasets", type=int, default=64)
    args = parser.parse_args(argv)
    try:
        summary = write_edit_log(sys.stdout if args.out == "-" else args.out, ops=args.ops,
                                 seed=args.seed, start_txid=args.start_txid,
                                 start_ms=args.start_ms, mass_delete=args.mass_delete,
                                 datasets=args.datasets)
    except ValueError as exc:
        parser.error(str(exc))
    block_ops = sum(n for op, n in summary.opcodes.items()
                    if op in ("OP_ALLOCATE_BLOCK_ID", "OP_SET_GENSTAMP_V2", "OP_ADD_BLOCK",
                              "OP_UPDATE_BLOCKS"))
    print(f"wrote {summary.ops} ops (txids {summary.first_txid}..{summary.last_txid}), "
          f"{summary.events} events expected, {block_ops / summary.ops:.0%} block ops"
          + (f", mass delete of {summary.mass_delete.count} under {summary.mass_delete.prefix}"
             if summary.mass_delete else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
