"""The namespace index written from a decoded fsimage by the Spark executors, on a first start or
to repair a gap (docs/fsimage.md, "First start from the image", "Gap repair from the image").

The consumer applies a snapshot's records one after another (its one in-order applier, ~19k
records/s at 5 ms per DynamoDB call). Records of one snapshot commute (hdfs_events/
snapshot_index.py: blind puts of final states, all at txid T), so here every task writes its
share at once: the covered inventory rows sorted into the agent's walk order in the JVM (the
contract's `walk_key` as a Spark column) and numbered there (each path gets the (T, i) the
listing would give it), cut into contiguous stretches of the walk, one a write task (the
records are blind puts of distinct keys: two tasks may write one partition key), each item
built there too as DynamoDB wire JSON from the contract's attribute list (glue_jobs/
index_item_json.py). Python only batches those strings and sends them (BatchWriteItem with the
body as it is, the request prepared once a task: glue_jobs/wire_batch_write.py), a few calls
in flight per task. Then the driver joins the in-order stream: `<cluster>!position` = applied
through T, put only where none exists, so the sequencer goes on at T+1 and a consumer that got
there first is never overtaken. The marker `_indexed.json` beside the image says it is done.

A first start needs an index with no position (glue_jobs/index_position.py); any other is
refused. A gap repair (`repair_after` N, the agent's checkpoint before edits the NameNode
purged) waits until the consumer has applied through N, reads the cluster's live entries (a
parallel Scan: glue_jobs/indexed_entries.py), keeps the directories they shard sharded, writes
the image's items as a first start does, deletes every live entry at a key the image does not
write (paths gone during the gap, a path's copy at its other key), and moves the position from
N to T in one conditional update. A rerun after a crash writes the same items (and removes
what is still stale); a run whose position is already T (a crash before the marker) writes the
marker only.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from glue_jobs.index_item_json import (
    delete_request_texts,
    item_keys,
    parent_of,
    put_request_texts,
)
from glue_jobs.index_position import (
    await_repair_position,
    check_first_start,
    join_stream,
    move_position,
)
from glue_jobs.indexed_entries import indexed_entries, sharded_directories, stale_keys
from glue_jobs.runtime import AWS_RETRIES
from glue_jobs.wire_batch_write import BatchWriteCalls, WireBody
from hdfs_events.snapshot_index import (
    DIRECTORY,
    SHARD_AFTER_WRITES,
    WALK_KEY_BYTES,
    WALK_KEY_CHARS,
    WALK_ROOT_DIGITS,
    covering_root,
    outermost,
)

BATCH_WRITE_LIMIT = 25  # DynamoDB BatchWriteItem items per call
# UnprocessedItems is DynamoDB's answer to a partition key written past its 1,000 WCU/s (a hot
# directory's shard while a task writes its children back to back): the items it did write
# are done, the rest are sent again. While each call writes some, that is throttling to be
# outwaited, however long (a directory of millions of children takes minutes at 16 keys x
# 1,000/s); the job fails only after this many calls in a row wrote none, each after a
# doubling wait (~11 s in all), as AWS advises for unprocessed items.
_STALLED_CALLS = 10
_RETRY_BASE_S, _RETRY_MAX_S = 0.05, 2.0
ROW_COLUMNS = ("path", "type", "size", "mtime", "atime", "owner", "group", "perms",
               "replication", "symlink_target")  # what the items hold (snapshot_wire.py)
# monotonically_increasing_id: the partition's index in the upper 31 bits, the row's below.
_ROW_BITS = 33


@dataclass(frozen=True, slots=True)
class IndexSettings:
    table: str
    prefixes: tuple[str, ...]  # the consumer's INDEX_PREFIXES for the cluster
    # BatchWriteItem calls in flight per task. At 5 ms a call, 8 capped a task at ~1,600 calls
    # (40,000 items) a second, less with the threads' wake-ups; 16 reached 50,000 records/s
    # over 2 tasks (docs/fsimage.md).
    threads: int = 16
    partitions: int = 0  # write tasks; 0: Spark's default parallelism
    # A gap repair (None: a first start): the agent's checkpoint N, the index applied through
    # it; and how long to wait for the consumer to get there.
    repair_after: int | None = None
    repair_wait_s: float = 900.0


@dataclass(frozen=True, slots=True)
class IndexReport:
    txid: int
    entries: int
    directories: int
    sharded_directories: int
    write_tasks: int
    batch_calls: int
    unprocessed_retries: int
    seconds: float
    already_indexed: bool = False
    numbering_seconds: float = 0.0  # of `seconds`: the walk order, numbers and hot directories
    # (on a repair, with the Scan of the index's entries)
    repair_after: int | None = None  # the agent's checkpoint a repair took over at
    removed: int = 0  # a repair's: live items the image does not hold, deleted


def dynamodb_client(threads: int) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("dynamodb", config=Config(retries=AWS_RETRIES,
                                                 max_pool_connections=threads))


# (threads) -> a botocore DynamoDB client (BatchWriteCalls sends through it), made on the
# executor
ClientFactory = Callable[[int], Any]


def covered_rows(prefixes: tuple[str, ...]) -> Callable[[DataFrame], DataFrame]:
    """Inventory rows a listing of the prefixes would list ("/" has no entry)."""
    def transform(rows: DataFrame) -> DataFrame:
        roots = outermost(prefixes)
        if "/" in roots:
            return rows.where(F.col("path") != "/")
        cond = F.lit(False)
        for root in roots:
            cond = cond | (F.col("path") == root) | F.col("path").startswith(root + "/")
        return rows.where(cond)
    return transform


def hot_directories(rows: DataFrame, prefixes: tuple[str, ...]) -> list[str]:
    """Covered directories with more children than the consumer's sharding threshold (the
    root of a walk's parent, "/" say, has no entry to record it on)."""
    roots = outermost(prefixes)
    counts = rows.groupBy(parent_of(F.col("path")).alias("parent")).count()
    # Only the hot few reach the driver (a directory per ~20 inodes would be millions).
    hot = counts.where(F.col("count") > SHARD_AFTER_WRITES).collect()
    return [r["parent"] for r in hot if covering_root(r["parent"], roots) is not None]


def walk_key_column(prefixes: tuple[str, ...]) -> Column:
    """snapshot_index.walk_key of each covered path, computed by the JVM: the root's position,
    then each UTF-8 byte of the path translated to its walk character (ISO-8859-1 reads one
    character per byte)."""
    roots = outermost(prefixes)
    path = F.col("path")
    root: Column = F.lit(None).cast("string")
    for i, r in reversed(list(enumerate(roots))):
        cond = F.lit(True) if r == "/" else (path == r) | path.startswith(r + "/")
        root = F.when(cond, F.lit(f"{i:0{WALK_ROOT_DIGITS}d}")).otherwise(root)
    chars = F.translate(F.decode(F.encode(path, "UTF-8"), "ISO-8859-1"),
                        WALK_KEY_BYTES, WALK_KEY_CHARS)
    return F.concat(root, chars)


@dataclass(frozen=True, slots=True)
class WalkNumbered:
    rows: DataFrame  # the covered rows with `index`
    directories: int  # of them


@contextmanager
def walk_numbered(rows: DataFrame, prefixes: tuple[str, ...], partitions: int
                  ) -> Iterator[WalkNumbered]:
    """The covered rows with `index`, each row's position in the agent's walk (0..n-1).

    Sorted into `partitions` range partitions (the write tasks), each numbered from its offset
    (the sizes of the partitions before it, counted on the cached sort, as zipWithIndex does): no
    single-partition window; the directories counted in the same pass. The sort stays cached
    while the caller reads it."""
    # The key as a column of its own: a sort by the expression evaluates it in every comparison
    # (paths share long prefixes, so the sorter's 8-byte prefixes rarely decide), ~20 times a
    # row; carried through the shuffle, it is computed twice a row (the range sample, the map).
    keyed = rows.select(*ROW_COLUMNS, walk_key_column(prefixes).alias("_walk"))
    ordered = (keyed.repartitionByRange(partitions, "_walk").sortWithinPartitions("_walk")
               .select(*ROW_COLUMNS, F.monotonically_increasing_id().alias("_row"))
               .persist(StorageLevel.MEMORY_AND_DISK))
    try:
        part = F.shiftright(F.col("_row"), _ROW_BITS)
        counted = ordered.groupBy(part.alias("part")).agg(
            F.count(F.lit(1)).alias("rows"),
            F.sum((F.col("type") == DIRECTORY).cast("long")).alias("directories")).collect()
        sizes = {r["part"]: r["rows"] for r in counted}
        offsets, at = [], 0
        for p in range(max(sizes, default=0) + 1):
            offsets.append(at)
            at += sizes.get(p, 0)
        offset = F.element_at(F.array(*(F.lit(o) for o in offsets)), (part + 1).cast("int"))
        within = F.col("_row").bitwiseAND((1 << _ROW_BITS) - 1)
        yield WalkNumbered(ordered.select(*ROW_COLUMNS, (offset + within).alias("index")),
                           sum(r["directories"] for r in counted))
    finally:
        ordered.unpersist()


def write_partition(table: str, threads: int, client: ClientFactory,
                    sleep: Callable[[float], None] = time.sleep
                    ) -> Callable[[Iterator[str]], Iterator[dict[str, int]]]:
    """Writes a task's write requests (PutRequest or DeleteRequest JSON texts), BatchWriteItem
    calls of 25; `entries` counts the requests."""
    def write(requests: Iterator[str]) -> Iterator[dict[str, int]]:
        calls = BatchWriteCalls(client(threads), table)
        counts = {"entries": 0, "batch_calls": 0, "unprocessed_retries": 0}

        def batches() -> Iterator[WireBody]:
            batch: list[str] = []
            for request in requests:
                batch.append(request)
                if len(batch) == BATCH_WRITE_LIMIT:
                    counts["entries"] += len(batch)
                    yield WireBody.of_requests(table, batch)
                    batch = []
            if batch:
                counts["entries"] += len(batch)
                yield WireBody.of_requests(table, batch)

        def send(body: WireBody) -> tuple[int, int]:
            """The calls it took and how many of them were resends (see _STALLED_CALLS)."""
            made, stalled, before = 0, 0, BATCH_WRITE_LIMIT + 1
            while True:
                left = calls.send(body).get("UnprocessedItems")
                made += 1
                if not left:
                    return made, made - 1
                unwritten = len(left[table])
                stalled = stalled + 1 if unwritten >= before else 0
                if stalled >= _STALLED_CALLS:
                    raise RuntimeError(
                        f"DynamoDB left {unwritten} index writes unprocessed in {stalled} calls "
                        f"in a row (throttled {made} calls in all)")
                before, body = unwritten, WireBody.of_unprocessed(left)
                sleep(min(_RETRY_BASE_S * 2 ** stalled, _RETRY_MAX_S))

        # Each thread takes the partition's next batch itself (no future a call: that cost
        # ~40 µs of CPU a call), so the partition is streamed, one batch a thread at a time.
        source, taking, failed = batches(), threading.Lock(), threading.Event()

        def sender() -> tuple[int, int]:
            made = retried = 0
            while not failed.is_set():
                with taking:
                    body = next(source, None)
                if body is None:
                    break
                try:
                    sent, again = send(body)
                except BaseException:
                    failed.set()
                    raise
                made, retried = made + sent, retried + again
            return made, retried

        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="index-write") as pool:
            for done in [pool.submit(sender) for _ in range(threads)]:
                made, retried = done.result()
                counts["batch_calls"] += made
                counts["unprocessed_retries"] += retried
        yield counts
    return write


def write_index(rows: DataFrame, cluster: str, txid: int, settings: IndexSettings, *,
                ddb: Any, client: ClientFactory = dynamodb_client,
                clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep) -> IndexReport:
    """The covered inventory `rows` of the image at `txid` into the index, then the position:
    joined on a first start; on a repair (settings.repair_after), the entries the image does
    not hold removed and the position moved from the agent's checkpoint to `txid`."""
    started, after = clock(), settings.repair_after
    if (check_first_start(ddb, settings.table, cluster, txid) if after is None else
            await_repair_position(ddb, settings.table, cluster, after, txid,
                                  wait_s=settings.repair_wait_s, sleep=sleep, clock=clock)):
        return IndexReport(txid, 0, 0, 0, 0, 0, 0, clock() - started, already_indexed=True,
                           repair_after=after)
    spark = rows.sparkSession
    partitions = settings.partitions or spark.sparkContext.defaultParallelism
    covered = rows.transform(covered_rows(settings.prefixes))
    # Read once (the sharded directories, then the stale keys), after the wait: the consumer
    # has applied all it will before the repair, and nothing after.
    indexed = None if after is None else (
        indexed_entries(spark, settings.table, cluster, partitions, client)
        .transform(covered_rows(settings.prefixes)).persist(StorageLevel.MEMORY_AND_DISK))
    try:
        with walk_numbered(covered, settings.prefixes, partitions) as numbered:
            hot = hot_directories(numbered.rows, settings.prefixes)
            if indexed is not None:
                hot = sorted({*hot, *sharded_directories(indexed)})
            numbering_seconds = clock() - started
            write = write_partition(settings.table, settings.threads, client)
            # Each task writes its stretch of the walk from the cached sort. Not shuffled again
            # by partition key: that cost a pass over every row (~2 executor CPU s at 1M), and
            # a key's rows reached their task one after another either way (a shuffle keeps
            # each map side's order), so no key was written at a lower rate.
            counts = (put_request_texts(numbered.rows, cluster, txid, hot)
                      .mapPartitions(write).collect())
            # Deleted, not marked: a delete marker only keeps an older event's redelivery from
            # bringing an entry back, and every event such a key saw is at or below N, which
            # the position (moved from N to T in one step after these writes) never applies
            # again. A marker would also hide the key only until its TTL.
            removals = [] if indexed is None else (
                delete_request_texts(stale_keys(indexed, item_keys(numbered.rows, cluster, hot))
                                     .coalesce(partitions))
                .mapPartitions(write).collect())
    finally:
        if indexed is not None:
            indexed.unpersist()
    if after is None:
        join_stream(ddb, settings.table, cluster, txid)
    else:
        move_position(ddb, settings.table, cluster, after, txid)
    total = {k: sum(c[k] for c in counts + removals) for k in counts[0]} if counts else {}
    return IndexReport(txid, sum(c["entries"] for c in counts), numbered.directories, len(hot),
                       len(counts), total.get("batch_calls", 0),
                       total.get("unprocessed_retries", 0), clock() - started,
                       numbering_seconds=numbering_seconds, repair_after=after,
                       removed=sum(c["entries"] for c in removals))


def marker_body(report: IndexReport, cluster: str) -> bytes:
    return json.dumps({"cluster": cluster, **asdict(report)}, sort_keys=True).encode()
