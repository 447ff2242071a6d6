"""Pure transforms of the compaction job: raw JSON lines -> validated events -> exactly-once rows.

Every function takes and returns DataFrames (or plain values), reads no files and knows no
clock, so each is tested on hand-built frames. glue_jobs.compaction_run does the I/O around them.

Quarantine grain: a line whose JSON, schema or UTF-8 is wrong is quarantined on its own and the
other lines of its object are kept, because one object holds a whole SQS message (up to ~1000
events of 1 MiB) and a single bad event must not hold back the rest (a bad UTF-8 byte cannot
hide a newline: every byte of a multi-byte sequence is >= 0x80). An object whose gzip stream is
broken is quarantined whole: after the first bad byte no line of it can be trusted.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from itertools import pairwise

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from glue_jobs.contract_sql import contract_holds, parse_canonical_line
from glue_jobs.schema import ADDED_FIELDS, CORRUPT_RECORD, KEY_COLUMNS, RAW_LINE_SCHEMA
from hdfs_events.event import FIELDS
from hdfs_events.lake_layout import RAW_PREFIX, raw_key_in_path
from hdfs_events.validation import line_problem

PartitionKey = tuple[str, str]

# Raw lines arrive with: object (the path Spark read it from, ending in its raw key),
# raw_cluster, raw_dt (from the key), value (the line).
RAW_LINE_COLUMNS = ("object", "raw_cluster", "raw_dt", "value")
# The raw key at the end of a path as Spark reports it (file:/..., s3://...).
RAW_KEY_TAIL = raw_key_in_path(RAW_PREFIX)
_MS_PER_DAY = 86_400_000
# A decompressed object may not exceed this: the consumer writes at most one SQS message's
# events (1 MiB of gzip) per object; anything far bigger is not ours.
MAX_OBJECT_TEXT_BYTES = 256 * 1_048_576
EMPTY_OBJECT = "empty object (not even a gzip header)"
NOT_UTF8 = "line is not UTF-8"


# --- whole objects -----------------------------------------------------------------------------

def gzip_problem(content: bytes | None) -> str | None:
    """Why a raw object's bytes are not a readable gzip stream, or None when they are."""
    if content is None:
        return "object could not be read"
    if len(content) == 0:
        return EMPTY_OBJECT
    remaining, data = MAX_OBJECT_TEXT_BYTES, content
    try:
        # Concatenated gzip members are valid gzip (Hadoop's codec reads them): loop over them.
        while data:
            inflater = zlib.decompressobj(wbits=31)
            chunk = inflater.decompress(data, remaining)
            remaining -= len(chunk)
            if inflater.unconsumed_tail:
                return f"gzip expands past {MAX_OBJECT_TEXT_BYTES} bytes"
            if not inflater.eof:
                return "gzip stream is truncated (no end of stream)"
            data = inflater.unused_data
    except zlib.error as exc:
        return f"not valid gzip: {exc}"
    return None


def object_problems(binary_files: DataFrame) -> DataFrame:
    """binaryFile rows (path, content, ...) -> (path, problem) for each unreadable object.

    Run only after Spark's text reader failed on a run's objects (compaction_run): Hadoop's
    GzipCodec fails the whole job on a corrupt stream without saying which object, and with
    ignoreCorruptFiles it keeps the lines read before the damage and drops the rest silently.
    A Python UDF because Spark has no gzip check of its own; it reads every byte twice, so it
    is the exception path, not the way every object is read.
    """
    check = F.udf(gzip_problem, T.StringType())
    return (binary_files.select("path", check("content").alias("problem"))
            .where(F.col("problem").isNotNull()))


# --- lines -------------------------------------------------------------------------------------

def classify_lines(lines: DataFrame) -> DataFrame:
    """(object, raw_cluster, raw_dt, value) -> the same plus `event` (the parsed struct) and
    `_clean`: the line is canonical JSON keeping every rule of the contract (contract_sql) and
    belongs to its partition's cluster, decided in the JVM alone. Blank lines carry nothing and
    are dropped.

    A canonical line is parsed by parse_canonical_line in the pass that proves it canonical;
    only the others go through Spark's from_json (a CASE branch: evaluated for them alone),
    whose struct with_reasons' checks read. Keeps `value` only on lines that are not clean (the
    only ones that can be bad), so a cached frame does not hold every line twice. The job
    caches this frame: with_reasons reads it in two branches.
    """
    e = F.col("event")
    parsed = F.col("_parsed")
    canonical = parsed["not_canonical"].isNull()
    classified = (
        lines.where(F.trim("value") != "")
        .withColumn("_parsed", parse_canonical_line(F.col("value")))
        .withColumn("event", F.when(canonical, parsed["event"]).otherwise(
            F.from_json("value", RAW_LINE_SCHEMA, {
                "mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_RECORD})))
        .withColumn("_clean", F.coalesce(canonical & contract_holds(e)
                                         & (e["cluster"] == F.col("raw_cluster")),
                                         F.lit(False)))
        .drop("_parsed")
    )
    return classified.withColumn("value", F.when(~F.col("_clean"), F.col("value")))


def with_reasons(classified: DataFrame, *, all_clean: bool = False) -> DataFrame:
    """classify_lines' frame -> the same with `reason` (null for a good line) in place of
    `_clean`; `value` kept only on bad lines.

    Two branches, because Spark evaluates a Python UDF on every row of its frame whatever CASE
    guards it: clean lines (nearly all) are good without a check more, and only the others go
    through the Python check (_problem). Read from a cached frame, the branches parse nothing
    twice. `all_clean`: the caller counted no other line, so the second branch is left out (each
    of its tasks would start a Python worker for nothing)."""
    clean = F.col("_clean")
    checked = classified.where(clean).withColumn("reason", F.lit(None).cast("string"))
    if not all_clean:
        checked = checked.unionByName(classified.where(~clean).withColumn("reason", _problem()))
    return (checked
            .withColumn("value", F.when(F.col("reason").isNotNull(), F.col("value")))
            .drop("_clean"))


def _line_problem(line: str | None) -> str | None:
    return None if line is None else line_problem(line)


def _problem() -> Column:
    """The first contract check a line that is not clean fails, as text; null when it passes all.

    The checks in order: UTF-8 and a JSON object, then the contract's rules through the one
    validation every component runs, hdfs_events.validation.line_problem, in Python (its reasons
    are the consumer's words and name the field), then what the lake needs beyond it: every key
    present except the ADDED_FIELDS (a line the consumer wrote before the contract gained them
    reads them as null), values Spark's reader can hold, and the partition's cluster."""
    e = F.col("event")
    keys = F.json_object_keys("value")
    contract = F.udf(_line_problem, T.StringType())(F.col("value"))
    expected = F.array(*[F.lit(n) for n in FIELDS if n not in ADDED_FIELDS])
    # Spark keeps a line's bytes as read; decoding them replaces a malformed sequence by U+FFFD,
    # so a line that does not survive the round trip is not UTF-8.
    utf8 = F.decode(F.col("value").cast("binary"), "UTF-8") == F.col("value")
    checks: list[tuple[Column, Column]] = [
        (~utf8, F.lit(NOT_UTF8)),  # first: Python would see the text with U+FFFD in place
        (keys.isNull(), F.lit("line is not a JSON object")),
        (contract.isNotNull(), contract),
        # What the contract's Python check allows and the lake does not: a line without a key
        # (canonical JSON has them all), a value Spark's reader cannot hold. Keys it does not
        # know are a newer minor's (docs/contract.md, "Versions"): the raw line keeps them for a
        # compaction with the newer schema; this one's table holds the columns it knows.
        (F.size(F.array_except(expected, keys)) > 0,
         F.concat(F.lit("missing key(s) "), F.array_join(F.array_except(expected, keys), ", "))),
        (e[CORRUPT_RECORD].isNotNull(),
         F.lit("a field has the wrong JSON type for the contract (hdfs_events.event)")),
        (e["cluster"] != F.col("raw_cluster"),
         F.concat(F.lit("event of cluster '"), e["cluster"],
                  F.lit("' in the partition of cluster '"), F.col("raw_cluster"), F.lit("'"))),
    ]
    reason: Column = F.lit(None).cast("string")
    for condition, text in reversed(checks):  # first failing check wins
        reason = F.when(condition, text).otherwise(reason)
    return reason


# The tally's quantiles of each partition's txids: enough points to cut a partition into this
# many files of even size (a day of a busy cluster is ~500 files of 128 MiB), with a rank error
# of 1/_QUANTILE_ACCURACY of the partition's rows.
TXID_QUANTILES = 128
_QUANTILE_ACCURACY = 2000


def line_tally(lines: DataFrame, bad: Column) -> DataFrame:
    """(bad, cluster, dt, lines, txids): counts of the lines `bad` marks, and of the others per
    curated partition with TXID_QUANTILES + 1 quantiles of their txids (first to last, null on
    the bad row). On classify_lines' frame with `~_clean` it counts the lines left for the Python
    check; on with_reasons' frame with `reason IS NOT NULL`, the bad lines.

    The quantiles come with the count, in the pass that fills the lines' cache, so the key
    ranges of the one shuffle (key_bounds) need no sampling pass of their own."""
    fractions = F.array(*[F.lit(k / TXID_QUANTILES) for k in range(TXID_QUANTILES + 1)])
    return (lines.select(bad.alias("bad"),
                         F.when(~bad, F.col("event.cluster")).alias("cluster"),
                         F.when(~bad, curated_dt(F.col("event.timestamp"))).alias("dt"),
                         F.when(~bad, F.col("event.txid")).alias("txid"))
            .groupBy("bad", "cluster", "dt")
            .agg(F.count(F.lit(1)).alias("lines"),
                 F.percentile_approx("txid", fractions, _QUANTILE_ACCURACY).alias("txids")))


def bad_lines(parsed: DataFrame) -> DataFrame:
    """(object, reason, line) of each bad line; object is the raw key."""
    return parsed.where(F.col("reason").isNotNull()).select(
        F.regexp_extract("object", RAW_KEY_TAIL, 1).alias("object"), "reason",
        F.col("value").alias("line"))


def good_events(parsed: DataFrame) -> DataFrame:
    """Valid lines as events with their curated dt (see curated_dt) and source object."""
    return (parsed.where(F.col("reason").isNull())
            .select("object", "raw_dt", *[F.col("event")[n].alias(n) for n in FIELDS])
            .withColumn("dt", curated_dt(F.col("timestamp")))
            .drop("raw_dt"))


def curated_dt(timestamp: Column) -> Column:
    """UTC date of the NameNode timestamp; for events without one (APPEND, METADATA) the date of
    the raw partition, which the consumer took from the message's SQS SentTimestamp. Computed
    with date arithmetic, not the session time zone, so a job in any zone files the same day."""
    days = F.floor(timestamp / _MS_PER_DAY).cast("int")
    return F.coalesce(F.date_format(F.date_add(F.lit("1970-01-01").cast("date"), days),
                                    "yyyy-MM-dd"), F.col("raw_dt"))


# --- exactly once ------------------------------------------------------------------------------
# One shuffle serves the dedup, the check against what is published and the file layout: the
# run's rows and the published rows near them are partitioned by key range (spread_in_ranges),
# which puts every copy of a key in one task (the window of exactly_once needs no exchange more)
# and cuts contiguous key ranges that become the run's files.

NEW = "_new"  # 1: a row of this run's input; 0: a published row
SLICE = "_slice"  # the label of a row's key slice: Spark's hash partitioner sends it to its slice


def with_published(existing_rows: DataFrame) -> Callable[[DataFrame], DataFrame]:
    """good_events' rows (tagged NEW 1) plus the published rows near them (NEW 0, no object)."""
    def transform(good: DataFrame) -> DataFrame:
        new = good.select(*FIELDS, "dt", "object", F.lit(1).alias(NEW))
        published = existing_rows.select(*FIELDS, "dt", F.lit(None).cast("string").alias("object"),
                                         F.lit(0).alias(NEW))
        return new.unionByName(published)
    return transform


@dataclass(frozen=True, slots=True)
class KeyRanges:
    """Contiguous (cluster, txid) ranges: range 0 ends before bounds[0], range i starts at
    bounds[i - 1]; labels[i] is a value Spark's hash partitioner sends to partition i (hash_labels).
    """
    bounds: tuple[tuple[str, int], ...]
    labels: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.labels) != len(self.bounds) + 1:
            raise ValueError(f"{len(self.bounds)} bounds make {len(self.bounds) + 1} ranges, "
                             f"not {len(self.labels)}")

    def label(self) -> Column:
        """Each row's range label from its (cluster, txid): a balanced tree of comparisons, so
        log2(ranges) of them per row in generated code (a higher-order function over the bounds
        would be interpreted, row by row)."""
        cluster, txid = F.col("cluster"), F.col("txid")

        def tree(first: int, last: int) -> Column:
            if first == last:
                return F.lit(self.labels[first]).cast("long")
            middle = (first + last + 1) // 2  # the first range of the upper half
            c, t = self.bounds[middle - 1]
            upper = (cluster > c) | ((cluster == c) & (txid >= t))
            return F.when(upper, tree(middle, last)).otherwise(tree(first, middle - 1))
        return tree(0, len(self.bounds))


def spread_in_ranges(ranges: KeyRanges) -> Callable[[DataFrame], DataFrame]:
    """Partitions rows by key range, range i to partition i, each a file of each dt it holds (a
    NameNode's txids follow its clock, so a range holds one dt but where it straddles midnight).

    Not repartitionByRange: it samples the keys in a pass of its own over the whole input first,
    where the bounds here come from quantiles the tally already computed. Hashing the label
    (placed by hash_labels) is the exchange Spark offers that puts a computed value's rows in a
    partition of our choosing; exactly_once's window, partitioned by the key and the label, is
    then satisfied without an exchange more."""
    return lambda rows: (rows.withColumn(SLICE, ranges.label())
                         .repartition(len(ranges.labels), SLICE))


def spread_hashed(slices: int) -> Callable[[DataFrame], DataFrame]:
    """Partitions rows by a hash of the key into `slices`, for a run that
    one_file_per_partition lays out anyway (one label: the key's hash places the rows)."""
    return lambda rows: (rows.withColumn(SLICE, F.lit(0).cast("long"))
                         .repartition(max(1, slices), *KEY_COLUMNS))


def hash_labels(spark: SparkSession, partitions: int) -> tuple[int, ...]:
    """For each partition i < `partitions`, a long that Spark's hash partitioner sends to i:
    pmod(hash(label), partitions) == i, asked of Spark itself (Murmur3, seed 42, as
    HashPartitioning computes it) in a tiny job rather than re-implemented here."""
    n = max(1, partitions)
    # 64 candidates per partition: the chance that one gets none is n * e^-64.
    found = dict(spark.range(64 * n)
                 .select(F.pmod(F.hash("id"), F.lit(n)).alias("p"), "id")
                 .groupBy("p").agg(F.min("id").alias("id")).collect())
    if len(found) < n:
        raise RuntimeError(f"no hash label found for {n - len(found)} of {n} partitions")
    return tuple(found[i] for i in range(n))


def exactly_once(lookback_days: int) -> Callable[[DataFrame], DataFrame]:
    """with_published' rows, each key's copies in one partition (spread_in_ranges or
    spread_hashed) -> every
    published row, and of each key's new copies the first by (dt, object), unless the key is
    published in a dt up to `lookback_days` away from it. object is dropped.

    The first by (dt, object): the earliest day, then the smallest object key, so the choice
    does not depend on file order."""
    def transform(rows: DataFrame) -> DataFrame:
        # txid first: the sort's prefix is then the txid, which decides nearly every
        # comparison (a run's rows mostly share one cluster name).
        # SLICE last: a function of the key, it splits no key's copies, and with it in the
        # spec the slices' hash exchange is all the window needs.
        ordered = (Window.partitionBy("txid", "index", "cluster", SLICE)
                   .orderBy(NEW, "dt", "object"))
        whole = ordered.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
        day = F.col("dt").cast("date")
        published_days = F.collect_list(F.when(F.col(NEW) == 0, day)).over(whole)
        # Published rows sort first: the first new copy comes right after them.
        first_new = F.row_number().over(ordered) == F.size(published_days) + 1
        near = F.exists(published_days, lambda d: F.abs(F.datediff(d, day)) <= lookback_days)
        keep = (F.col(NEW) == 0) | (first_new & ~near)
        return rows.withColumn("_keep", keep).where("_keep").drop("_keep", "object", SLICE)
    return transform


def of_partitions(partitions: Iterable[PartitionKey]) -> Callable[[DataFrame], DataFrame]:
    """exactly_once's rows -> the new rows, and the published rows of these partitions only."""
    wanted = [F.struct(F.lit(c).alias("cluster"), F.lit(d).alias("dt"))
              for c, d in sorted(set(partitions))]

    def transform(rows: DataFrame) -> DataFrame:
        listed = F.struct("cluster", "dt").isin(*wanted) if wanted else F.lit(False)
        return rows.where((F.col(NEW) == 1) | listed)
    return transform


def one_file_per_partition(partitions: int) -> Callable[[DataFrame], DataFrame]:
    """When every partition fits one file: hashing on (cluster, dt) gives each exactly one, where
    key ranges could split one across two slices (a second shuffle, of a run small enough for
    one file per partition), each slice sorted by partition then key."""
    return lambda rows: (rows.repartition(max(1, partitions), "cluster", "dt")
                         .sortWithinPartitions("cluster", "dt", *KEY_COLUMNS[1:]))


# --- planning (plain values) -------------------------------------------------------------------

def read_paths(readable: Iterable[str], listed: Iterable[str]) -> list[str]:
    """What to hand Spark's reader so that it reads the `readable` keys: a folder whole (ending
    in "/") where the listing shows no other object in it, the keys one by one elsewhere.

    Spark checks that every path it is given exists (DataSource, 40 threads), then lists each
    (InMemoryFileIndex): on S3, requests per object, where a day of 10,000 raw objects is 24
    hour folders. A folder is read whole only when all it holds is readable: an object already
    compacted, empty, damaged or outside the raw layout keeps its folder to single keys; so
    does a name Hadoop's listing hides (a leading "_" or ".")."""
    wanted: dict[str, set[str]] = {}
    for key in readable:
        wanted.setdefault(key.rpartition("/")[0], set()).add(key)
    # Folders of readable keys that the listing shows holding anything else.
    mixed = {folder for folder, key in ((k.rpartition("/")[0], k) for k in listed)
             if folder in wanted and key not in wanted[folder]}
    paths: list[str] = []
    for folder, keys in sorted(wanted.items()):
        hidden = any(k.rpartition("/")[2].startswith(("_", ".")) for k in keys)
        if folder in mixed or hidden:
            paths.extend(sorted(keys))
        else:
            paths.append(folder + "/")
    return paths


def shuffle_partitions(input_bytes: int, bytes_per_partition: int, cores: int) -> int:
    """Shuffle partitions for an input: about bytes_per_partition each, never fewer than two
    per core (so every core has work while a slow task finishes)."""
    return max(2 * cores, math.ceil(input_bytes / max(1, bytes_per_partition)))


def key_slices(files: int, cores: int) -> int:
    """spread_in_ranges' slices for `files` files: rounded up to a multiple of the cores when that
    adds at most a quarter more files, so the last wave of tasks keeps every core busy (5
    slices on 2 cores run as 2+2+1, 6 as 2+2+2 smaller ones); otherwise the files' count."""
    rounded = math.ceil(files / max(1, cores)) * max(1, cores)
    return rounded if rounded * 4 <= files * 5 else max(1, files)


# Rows spread evenly over a cluster's txids first..last: (cluster, first, last, rows).
TxidSpan = tuple[str, int, int, float]


def quantile_spans(cluster: str, quantiles: list[int], rows: int) -> list[TxidSpan]:
    """A partition's rows as spans between consecutive txid quantiles (line_tally's), each
    holding an equal share."""
    if len(quantiles) < 2:
        return [(cluster, q, q, float(rows)) for q in quantiles]
    share = rows / (len(quantiles) - 1)
    return [(cluster, lo, hi, share) for lo, hi in pairwise(quantiles)]


def key_bounds(spans: Iterable[TxidSpan], ranges: int) -> tuple[tuple[str, int], ...]:
    """Where to cut (cluster, txid) order into `ranges` ranges of about equal rows: the first
    key of every range but the first, ascending, without repeats (a point heavier than a range
    leaves fewer, larger ranges). Spans may overlap: their densities add."""
    steps: dict[str, list[tuple[int, float]]] = {}
    total = 0.0
    for cluster, first, last, rows in spans:
        if rows <= 0 or last < first:
            continue
        density = rows / (last + 1 - first)  # rows per txid, over first..last inclusive
        steps.setdefault(cluster, []).extend([(first, density), (last + 1, -density)])
        total += rows
    targets = [total * k / ranges for k in range(1, max(1, ranges))]
    bounds: list[tuple[str, int]] = []
    passed, t = 0.0, 0
    for cluster in sorted(steps):
        density = 0.0
        for (at, change), (following, _) in pairwise(sorted(steps[cluster])):
            density += change
            if density <= 0 or following == at:
                continue
            weight = density * (following - at)
            while t < len(targets) and passed + weight >= targets[t]:
                cut = at + math.ceil((targets[t] - passed) / density)
                bounds.append((cluster, min(max(cut, at), following)))
                t += 1
            passed += weight
    return tuple(sorted(set(bounds)))


def files_for(rows: int, rows_per_file: int) -> int:
    return max(1, math.ceil(rows / max(1, rows_per_file)))


def rows_per_file(target_file_bytes: int, bytes_per_row: float) -> int:
    return max(1, int(target_file_bytes / max(bytes_per_row, 1.0)))


def lookback_partitions(touched: Iterable[PartitionKey], published: Iterable[PartitionKey],
                        lookback_days: int) -> set[PartitionKey]:
    """Published partitions within `lookback_days` of any touched one (itself included)."""
    near: set[PartitionKey] = set()
    for cluster, dt in touched:
        day = date.fromisoformat(dt)
        for delta in range(-lookback_days, lookback_days + 1):
            near.add((cluster, (day + timedelta(days=delta)).isoformat()))
    return near & set(published)


def total_files(rows_by_partition: Mapping[PartitionKey, int], per_file: int) -> int:
    return sum(files_for(n, per_file) for n in rows_by_partition.values())
