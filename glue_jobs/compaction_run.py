"""One run of the compaction job: I/O at the edges around the pure transforms of
glue_jobs.compaction. The entry script (glue_jobs/compact_events.py) parses the arguments,
builds the session and calls compact().

One run: list raw/ against the watermark -> read each new object's lines through Hadoop's gzip
codec (if that fails, find the damaged objects and read the rest) -> parse and validate the
lines (bad lines and objects to quarantine/glue/) -> in one shuffle by key, drop duplicates
within the run and keys already curated within +-lookback_days, and write each partition the
run adds to whole (its new and published rows) to a fresh run prefix -> switch the catalog ->
mark the days the rollups owe (glue_jobs.rollup_days) -> advance the watermark -> remove
superseded runs past their grace period.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from glue_jobs import compaction, raw_objects, rollup_days, watermark
from glue_jobs.catalog import PartitionCatalog, PartitionKey
from glue_jobs.curated_io import (
    read_published,
    remove_superseded_runs,
    row_counts,
    stored_bytes,
    txid_spans,
    write_runs,
)
from glue_jobs.layout import QUARANTINE_GLUE_PREFIX
from glue_jobs.storage import LakeStore
from hdfs_events.event import FIELDS
from hdfs_events.lake_layout import EVENTS_PREFIX, RAW_PREFIX, new_run_id, run_prefix

# The text source's line plus the raw layout's partition directories, all strings (Spark would
# infer dt as a date and hour as an int otherwise).
_RAW_TEXT_SCHEMA = "value string, cluster string, dt string, hour string"
# Shuffle partitions: about this much decompressed input each (the JSON text is ~10x its gzip).
_SHUFFLE_BYTES = 128 * 1_048_576
_TEXT_PER_GZIP_BYTE = 10
_OPEN_FILES_PER_TASK = 4
_OPEN_COST_BYTES = 1_048_576


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    lookback_days: int = 1
    target_file_bytes: int = 128 * 1_048_576
    bytes_per_row: float = 60.0
    retain: timedelta = timedelta(hours=24)
    compression: str = "zstd"


@dataclass(frozen=True, slots=True)
class CompactionReport:
    run_id: str
    objects_read: int = 0
    events_read: int = 0
    events_added: int = 0
    duplicates_dropped: int = 0
    quarantined_objects: int = 0
    quarantined_lines: int = 0
    ignored_objects: int = 0  # keys outside the raw layout, left where they are
    partitions_published: int = 0
    files_written: int = 0
    runs_removed: int = 0


def compact(spark: SparkSession, source: LakeStore, target: LakeStore,
            catalog: PartitionCatalog, settings: CompactionSettings, *, run_id: str | None = None,
            now: datetime | None = None) -> CompactionReport:
    now = now or datetime.now(UTC)
    run_id = run_id or new_run_id(now)
    known = watermark.load(target)
    listing = list(source.list_objects(RAW_PREFIX))
    todo, strays = watermark.pending(listing, known)
    if not todo:
        return CompactionReport(run_id, ignored_objects=len(strays))
    by_key = {o.info.key: o for o in todo}

    # 1. Lines, read through Hadoop's gzip codec in the JVM; damaged objects set apart.
    cores = spark.sparkContext.defaultParallelism
    with _session_conf(spark, {
        "spark.sql.shuffle.partitions": compaction.shuffle_partitions(
            sum(o.info.size for o in todo) * _TEXT_PER_GZIP_BYTE, _SHUFFLE_BYTES, cores),
        # Spark lists more than 32 given paths in a job of one task per path (10,000 at most):
        # thousands of raw objects made thousands of tiny tasks. One task per core lists the
        # same paths with the same requests.
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": cores,
        # A write partitioned by (cluster, dt) sorts each task's rows by them first, unless it
        # may keep a file open per partition: a key slice is in key order already and holds
        # one dt but where it straddles midnight. Past this many open files a task sorts the
        # rest (each open Parquet file buffers a row group).
        "spark.sql.maxConcurrentOutputFileWriters": _OPEN_FILES_PER_TASK,
        # Spark packs small files into read tasks counting each as this many bytes more (4 MiB
        # by default, for HDFS blocks): a raw object is ~20 KB of gzip, so a task read ~32 of
        # them and 10M events made ~300 tasks, whose scheduling cost more than their objects.
        "spark.sql.files.openCostInBytes": _OPEN_COST_BYTES,
        # Adaptive execution runs the fill of a cache as a stage of its own, so filling the
        # lines' cache and counting them took two passes; without it the tally's scan fills the
        # cache as it counts. Nothing is left for it to adapt here: the run sizes its shuffles
        # itself and joins nothing.
        "spark.sql.adaptive.enabled": "false",
    }):
        lines, problems = _read_lines(spark, source, todo, (o.key for o in listing))
        quarantined_objects = raw_objects.quarantine_objects(source, target, QUARANTINE_GLUE_PREFIX, run_id,
                                                               problems)
        outcomes = {k: (by_key[k], f"quarantined: {why}") for k, why in problems.items()}
        outcomes |= {k: (by_key[k], watermark.OUTCOME_COMPACTED)
                     for k in by_key if k not in problems}
        report = CompactionReport(run_id, objects_read=len(todo),
                                  quarantined_objects=quarantined_objects,
                                  ignored_objects=len(strays))
        if lines is None:
            watermark.advance(target, known, outcomes)
            return report
        return _publish(spark, target, catalog, settings, run_id, now, lines, known, outcomes,
                        report)


@contextmanager
def _session_conf(spark: SparkSession, conf: Mapping[str, object]) -> Iterator[None]:
    """Sets the session's SQL conf for one run and puts back what it was (a Glue job or a test
    may run compact() again on the same session)."""
    previous = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, str(value))
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


@dataclass(frozen=True, slots=True)
class _Lines:
    cached: DataFrame  # classify_lines' frame, persisted
    checked: DataFrame  # with_reasons, read from the cache
    good: dict[PartitionKey, int]  # good lines per curated partition
    spans: list[compaction.TxidSpan]  # how the good lines spread over their txids
    bad: int  # bad lines


def _read_lines(spark: SparkSession, source: LakeStore, todo: list[watermark.RawObject],
                listing: Iterable[str]) -> tuple[_Lines | None, dict[str, str]]:
    """(the lines, None when no object is readable; {key: problem} of the unreadable objects).

    An empty object (the listing says so) is not gzip. Every other object is read as it is
    trusted to be (the consumer wrote it); a damaged gzip stream fails the read, and only then
    is each object checked, the damaged ones set apart and the rest read again. `listing`: every
    key the run's listing showed under raw/ (compaction.read_paths reads folders whole)."""
    problems = {o.info.key: compaction.EMPTY_OBJECT for o in todo if o.info.size == 0}
    readable = [o.info.key for o in todo if o.info.key not in problems]
    listed = set(listing)  # grows by the damaged objects the listing did not show
    while readable:
        paths = compaction.read_paths(readable, listed)
        classified = _raw_lines(spark, source, paths).transform(compaction.classify_lines) \
            .persist(StorageLevel.MEMORY_AND_DISK)
        try:
            # One pass fills the cache and counts the clean lines per partition and the others.
            # Filled before with_reasons reads it in two branches: over a cache not yet filled,
            # Spark ran a branch per cached scan at once, the second one's tasks holding a core
            # each while they waited for the first's blocks (local[2] ran as local[1]).
            tally = compaction.line_tally(classified, ~F.col("_clean")).collect()
            unclear = any(r["bad"] for r in tally)
            checked = compaction.with_reasons(classified, all_clean=not unclear)
            if unclear:  # only the lines that are not clean go through the Python check
                tally = [r for r in tally if not r["bad"]] + compaction.line_tally(
                    compaction.with_reasons(classified.where(~F.col("_clean"))),
                    F.col("reason").isNotNull()).collect()
            good: Counter[PartitionKey] = Counter()
            spans: list[compaction.TxidSpan] = []
            for r in tally:
                if not r["bad"]:
                    good[(r["cluster"], r["dt"])] += r["lines"]
                    spans += compaction.quantile_spans(r["cluster"], r["txids"], r["lines"])
            bad = sum(r["lines"] for r in tally if r["bad"])
            return _Lines(classified, checked, dict(good), spans, bad), problems
        except Exception:  # any failure of the read: damaged objects explain it, else raised
            classified.unpersist()
            damaged = _damaged_objects(spark, source, paths)
            if not damaged:
                raise
            # A damaged object written into a folder read whole after the listing is not this
            # run's: its folder is read key by key from here on, and the next run lists it.
            listed |= damaged.keys()
            problems |= {k: why for k, why in damaged.items() if k in readable}
            readable = [k for k in readable if k not in damaged]
    return None, problems


def _publish(spark: SparkSession, target: LakeStore, catalog: PartitionCatalog,
             settings: CompactionSettings, run_id: str, now: datetime, lines: _Lines, known: dict,
             outcomes: dict, report: CompactionReport) -> CompactionReport:
    """Steps 2-6 on the read lines: quarantine, exactly-once write, switch, watermark, cleanup."""
    # 2. Bad lines to quarantine, good ones on.
    if lines.bad:
        (compaction.bad_lines(lines.checked).coalesce(1).write.mode("overwrite").option(
            "compression", "gzip").json(f"{target.root_uri}{QUARANTINE_GLUE_PREFIX}lines/run={run_id}/"))
    added, files = _write_new_runs(spark, target, catalog, settings, run_id, lines) \
        if lines.good else ({}, 0)
    lines.cached.unpersist()
    # 5. Publish: every changed partition flips to its complete new run.
    if added:
        catalog.publish({(c, d): target.root_uri + run_prefix(EVENTS_PREFIX, c, d, run_id) for c, d in added})
    # The days the rollups owe: every partition the lines belong to, added to or not. Before
    # the watermark: a crash in between re-reads these lines next run, which then adds
    # nothing (all curated) but marks the same days again.
    rollup_days.mark(target, run_id, lines.good)

    watermark.advance(target, known, outcomes)
    removed = remove_superseded_runs(target, added, catalog.locations(), now, settings.retain)
    events_added = sum(added.values())
    good_count = sum(lines.good.values())
    return replace(
        report, events_read=good_count, events_added=events_added,
        duplicates_dropped=good_count - events_added, quarantined_lines=lines.bad,
        partitions_published=len(added), files_written=files if added else 0,
        runs_removed=removed)


def _write_new_runs(spark: SparkSession, target: LakeStore, catalog: PartitionCatalog,
                    settings: CompactionSettings, run_id: str, lines: _Lines
                    ) -> tuple[dict[PartitionKey, int], int]:
    """({partition: new rows} of the partitions the run adds to, each written whole to its new
    run; the files planned)."""
    touched = set(lines.good)
    # 3. Files planned before the one shuffle (it cuts them): the good lines, duplicates
    #    included, plus the published rows of the partitions they touch.
    published = catalog.locations()
    near = compaction.lookback_partitions(touched, published, settings.lookback_days)
    republished_files = txid_spans(spark, [published[k] for k in touched if k in published])
    republished: Counter[PartitionKey] = Counter()
    for key, _, _, n in republished_files:
        republished[key] += n
    per_row = _bytes_per_row(target, [published[k] for k in republished],
                             sum(republished.values()), settings.bytes_per_row)
    files = compaction.total_files(
        {k: n + republished.get(k, 0) for k, n in lines.good.items()},
        compaction.rows_per_file(settings.target_file_bytes, per_row))
    one_per_partition = files == len(touched)
    if one_per_partition:
        spread = compaction.spread_hashed(int(spark.conf.get("spark.sql.shuffle.partitions")))
    else:  # key ranges of even rows, new and republished, from the tally and the files' spans
        bounds = compaction.key_bounds(
            lines.spans + [(c, first, last, n) for (c, _), first, last, n in republished_files],
            compaction.key_slices(files, spark.sparkContext.defaultParallelism))
        spread = compaction.spread_in_ranges(compaction.KeyRanges(
            bounds, compaction.hash_labels(spark, len(bounds) + 1)))

    # 4. Exactly once (within the run, then against what is already curated nearby) in one
    #    shuffle by key, straight into the files: every touched partition is written whole (new
    #    rows and its published rows) to a new run; the published rows of untouched partitions
    #    only served the check.
    rows = (lines.checked.transform(compaction.good_events)
            .transform(compaction.with_published(
                read_published(spark, [published[k] for k in near])))
            .transform(spread)
            .transform(compaction.exactly_once(settings.lookback_days))
            .transform(compaction.of_partitions(touched)))
    if one_per_partition:
        rows = rows.transform(compaction.one_file_per_partition(files))
    write_runs(rows.select(*FIELDS, "dt"), target.root_uri, run_id, settings.compression)

    # What each partition gained: its new run's rows (counted from the Parquet footers) less its
    # published ones. A new run that adds nothing (every line a duplicate) is removed.
    written = row_counts(spark, [target.root_uri + run_prefix(EVENTS_PREFIX, *k, run_id)
                                 for k in _written_partitions(target, touched, run_id)])
    added = {k: n - republished.get(k, 0) for k, n in written.items()
             if n > republished.get(k, 0)}
    for c, d in written.keys() - added.keys():
        target.delete_prefix(run_prefix(EVENTS_PREFIX, c, d, run_id))
    return added, files


def _written_partitions(target: LakeStore, partitions: set[PartitionKey], run_id: str
                        ) -> list[PartitionKey]:
    """The partitions the run wrote a Parquet file to (one listing each)."""
    return [k for k in sorted(partitions)
            if any(o.key.endswith(".parquet")
                   for o in target.list_objects(run_prefix(EVENTS_PREFIX, *k, run_id)))]


def _raw_lines(spark: SparkSession, source: LakeStore, paths: list[str]) -> DataFrame:
    """(object, raw_cluster, raw_dt, value) of the lines of the raw objects at `paths` (keys and
    folders, compaction.read_paths). cluster and dt come from the key's partition directories
    (one value per file, no per-line work); object is the path."""
    return (raw_objects.raw_reader(spark, source, RAW_PREFIX).schema(_RAW_TEXT_SCHEMA)
            .text([source.root_uri + p for p in paths])
            .select(F.col("_metadata.file_path").alias("object"),
                    F.col("cluster").alias("raw_cluster"), F.col("dt").alias("raw_dt"), "value"))


def _damaged_objects(spark: SparkSession, source: LakeStore, paths: list[str]
                     ) -> dict[str, str]:
    """{key: problem} of the objects at `paths` whose gzip stream cannot be read, checked one by
    one."""
    files = raw_objects.raw_reader(spark, source, RAW_PREFIX).format("binaryFile").load(
        [source.root_uri + p for p in paths])
    return {raw_objects.raw_key(r["path"], RAW_PREFIX): r["problem"]
            for r in compaction.object_problems(files).collect()}





def _bytes_per_row(target: LakeStore, locations: list[str], rows: int, default: float) -> float:
    if rows < 10_000:  # too few rows for a stable ratio (Parquet footers dominate)
        return default
    return stored_bytes(target, locations) / rows
