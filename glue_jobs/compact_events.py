"""Glue job: compacts new raw event objects into the curated events table, exactly once.

    python -m glue_jobs.compact_events --source file:///lake --target file:///lake

One run: list raw/ against the watermark -> read each new object's lines through Hadoop's gzip
codec (if that fails, find the damaged objects and read the rest) -> parse and validate the
lines (bad lines and objects to quarantine/glue/) -> drop duplicates within the run -> drop
keys already curated within +-lookback_days -> merge with the partitions they land in -> write
each partition to a fresh run prefix -> switch the catalog -> advance the watermark -> remove
superseded runs past their grace period. Prints a JSON report.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from urllib.parse import unquote

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from glue_jobs import compaction as C
from glue_jobs import watermark
from glue_jobs.catalog import GlueCatalog, JsonFileCatalog, PartitionCatalog
from glue_jobs.curated_io import (
    read_published,
    remove_superseded_runs,
    stored_bytes,
    write_runs,
)
from glue_jobs.layout import LOCAL_CATALOG_KEY, QUARANTINE_GLUE_PREFIX, new_run_id, run_prefix
from glue_jobs.runtime import Arg, job_session, resolve_args
from glue_jobs.storage import LakeStore, store_for
from hdfs_events.names import RAW_PREFIX

JOB_NAME = "compact_events"
# The text source's line plus the raw layout's partition directories, all strings (Spark would
# infer dt as a date and hour as an int otherwise).
_RAW_TEXT_SCHEMA = "value string, cluster string, dt string, hour string"
SPEC = (
    Arg("source", "lake URI that holds raw/ (file:///path or s3://bucket[/prefix])"),
    Arg("target", "lake URI for curated/, quarantine/ and the watermark"),
    Arg("lookback_days", "a key already curated this many days either side is not added again",
        "1"),
    Arg("target_file_mb", "aim for Parquet files of about this size", "128"),
    Arg("bytes_per_row", "Parquet bytes per event assumed before a partition exists", "60"),
    Arg("retain_hours", "superseded run prefixes are deleted after this grace period", "24"),
    Arg("compression", "Parquet codec: zstd or snappy", "zstd"),
    Arg("catalog_database", "Glue database of the table; empty: a JSON catalog in the target",
        ""),
    Arg("catalog_table", "Glue table of the curated events", "events"),
)
# Shuffle partitions: about this much decompressed input each (the JSON text is ~10x its gzip).
_SHUFFLE_BYTES = 128 * 1_048_576
_TEXT_PER_GZIP_BYTE = 10


@dataclass(frozen=True, slots=True)
class Settings:
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
            catalog: PartitionCatalog, settings: Settings, *, run_id: str | None = None,
            now: datetime | None = None) -> CompactionReport:
    now = now or datetime.now(UTC)
    run_id = run_id or new_run_id(now)
    known = watermark.load(target)
    todo, strays = watermark.pending(source.list_objects(RAW_PREFIX), known)
    if not todo:
        return CompactionReport(run_id, ignored_objects=len(strays))
    by_key = {o.info.key: o for o in todo}

    # 1. Lines, read through Hadoop's gzip codec in the JVM; damaged objects set apart.
    cores = spark.sparkContext.defaultParallelism
    with _session_conf(spark, {
        "spark.sql.shuffle.partitions": C.shuffle_partitions(
            sum(o.info.size for o in todo) * _TEXT_PER_GZIP_BYTE, _SHUFFLE_BYTES, cores),
        # Spark lists more than 32 given paths in a job of one task per path (10,000 at most):
        # thousands of raw objects made thousands of tiny tasks. One task per core lists the
        # same paths with the same requests.
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": cores,
    }):
        lines, problems = _read_lines(spark, source, todo)
        quarantined_objects = _quarantine_objects(source, target, run_id, problems)
        outcomes = {k: (by_key[k], f"quarantined: {why}") for k, why in problems.items()}
        outcomes |= {k: (by_key[k], watermark.OUTCOME_COMPACTED)
                     for k in by_key if k not in problems}
        if lines is None:
            watermark.advance(target, known, outcomes)
            return CompactionReport(run_id, objects_read=len(todo),
                                    quarantined_objects=quarantined_objects,
                                    ignored_objects=len(strays))
        return _publish(spark, target, catalog, settings, run_id, now, lines, known,
                        outcomes, CompactionReport(
                            run_id, objects_read=len(todo),
                            quarantined_objects=quarantined_objects,
                            ignored_objects=len(strays)))


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
    tally: list[Row]  # line_tally of `checked`


def _read_lines(spark: SparkSession, source: LakeStore, todo: list[watermark.RawObject]
                ) -> tuple[_Lines | None, dict[str, str]]:
    """(the lines, None when no object is readable; {key: problem} of the unreadable objects).

    An empty object (the listing says so) is not gzip. Every other object is read as it is
    trusted to be (the consumer wrote it); a damaged gzip stream fails the read, and only then
    is each object checked, the damaged ones set apart and the rest read again."""
    problems = {o.info.key: C.EMPTY_OBJECT for o in todo if o.info.size == 0}
    readable = [o.info.key for o in todo if o.info.key not in problems]
    while readable:
        classified = _raw_lines(spark, source, readable).transform(C.classify_lines) \
            .persist(StorageLevel.MEMORY_AND_DISK)
        try:
            # The cache is filled by a job of its own: with_reasons reads it in two branches,
            # and Spark runs a branch per cached scan at once, the second one's tasks holding
            # a core each while they wait for the first's blocks (local[2] ran as local[1]).
            unclear = classified.where(~F.col("_clean")).count()
            checked = C.with_reasons(classified, all_clean=unclear == 0)
            # Then one pass: good/bad totals and the partitions the good lines touch.
            return _Lines(classified, checked, checked.transform(C.line_tally).collect()), \
                problems
        except Exception:  # any failure of the read: damaged objects explain it, else raised
            classified.unpersist()
            damaged = _damaged_objects(spark, source, readable)
            if not damaged:
                raise
            problems |= damaged
            readable = [k for k in readable if k not in damaged]
    return None, problems


def _publish(spark: SparkSession, target: LakeStore, catalog: PartitionCatalog,
             settings: Settings, run_id: str, now: datetime, lines: _Lines, known: dict,
             outcomes: dict, report: CompactionReport) -> CompactionReport:
    """Steps 2-8 on the read lines: quarantine, exactly once, merge, write, switch, watermark,
    cleanup."""
    parsed, tally = lines.checked, lines.tally
    # 2. Bad lines to quarantine, good ones on.
    bad_count = sum(r["lines"] for r in tally if r["bad"])
    good_count = sum(r["lines"] for r in tally if not r["bad"])
    touched = [(r["cluster"], r["dt"]) for r in tally if not r["bad"]]
    if bad_count:
        (C.bad_lines(parsed).coalesce(1).write.mode("overwrite").option("compression", "gzip")
         .json(f"{target.root_uri}{QUARANTINE_GLUE_PREFIX}lines/run={run_id}/"))

    # 3. Exactly once: within the run, then against what is already curated nearby.
    published = catalog.locations()
    near = C.lookback_partitions(touched, published, settings.lookback_days)
    existing = read_published(spark, [published[k] for k in near])
    fresh = (parsed.transform(C.good_events).transform(C.dedup_batch)
             .transform(C.not_yet_curated(existing.select("cluster", "txid", "index", "dt"),
                                          settings.lookback_days))
             .persist(StorageLevel.MEMORY_AND_DISK))
    counts = fresh.transform(C.partition_counts(existing)).collect()
    added = {(r["cluster"], r["dt"]): r["added"] for r in counts if r["added"]}
    kept = {(r["cluster"], r["dt"]): r["kept"] for r in counts if r["added"] and r["kept"]}
    lines.cached.unpersist()

    files = 0
    if added:
        # 4. Merge with the partitions' published rows; size files from what exists.
        rows = {k: n + kept.get(k, 0) for k, n in added.items()}
        per_row = _bytes_per_row(target, [published[k] for k in kept], sum(kept.values()),
                                 settings.bytes_per_row)
        per_file = C.rows_per_file(settings.target_file_bytes, per_row)
        files = C.total_files(rows, per_file)
        merged = fresh.transform(C.merged_partitions(existing)).transform(
            C.sorted_for_files(files, one_per_partition=files == len(rows)))
        write_runs(merged, target.root_uri, run_id, settings.compression)
        # 5. Publish: every changed partition flips to its complete new run.
        catalog.publish({(c, d): target.root_uri + run_prefix(c, d, run_id) for c, d in added})
    fresh.unpersist()

    watermark.advance(target, known, outcomes)
    removed = remove_superseded_runs(target, added, catalog.locations(), now, settings.retain)
    events_added = sum(added.values())
    return replace(
        report, events_read=good_count, events_added=events_added,
        duplicates_dropped=good_count - events_added, quarantined_lines=bad_count,
        partitions_published=len(added), files_written=files, runs_removed=removed)


def _raw_lines(spark: SparkSession, source: LakeStore, keys: list[str]) -> DataFrame:
    """(object, raw_cluster, raw_dt, value) of the objects' lines. cluster and dt come from the
    key's partition directories (one value per file, no per-line work); object is the path."""
    return (spark.read.schema(_RAW_TEXT_SCHEMA).option("basePath", source.root_uri + RAW_PREFIX)
            .text([source.root_uri + k for k in keys])
            .select(F.col("_metadata.file_path").alias("object"),
                    F.col("cluster").alias("raw_cluster"), F.col("dt").alias("raw_dt"), "value"))


def _damaged_objects(spark: SparkSession, source: LakeStore, keys: list[str]) -> dict[str, str]:
    """{key: problem} of the objects whose gzip stream cannot be read, checked one by one."""
    files = spark.read.format("binaryFile").load([source.root_uri + k for k in keys])
    return {_raw_key(r["path"]): r["problem"] for r in C.object_problems(files).collect()}


def _raw_key(spark_path: str) -> str:
    """The store key of a raw object from the path Spark reports (file:/..., s3://...)."""
    path = unquote(spark_path)
    return path[path.rfind("/" + RAW_PREFIX + "cluster=") + 1:]


def _quarantine_objects(source: LakeStore, target: LakeStore, run_id: str,
                        problems: dict[str, str]) -> int:
    """Copies each unreadable object, byte for byte, beside a .reason.txt naming the problem."""
    for key, why in sorted(problems.items()):
        dest = f"{QUARANTINE_GLUE_PREFIX}objects/run={run_id}/{key}"
        data = source.read_bytes(key)
        if data is not None:
            target.write_bytes(dest, data)
        target.write_bytes(dest + ".reason.txt",
                           f"{source.root_uri}{key}: {why}\n".encode())
    return len(problems)


def _bytes_per_row(target: LakeStore, locations: list[str], rows: int, default: float) -> float:
    if rows < 10_000:  # too few rows for a stable ratio (Parquet footers dominate)
        return default
    return stored_bytes(target, locations) / rows


def catalog_for(args: dict[str, str], target: LakeStore) -> PartitionCatalog:
    if args["catalog_database"]:
        import boto3  # on Glue; local runs use the JSON catalog and need no AWS library

        return GlueCatalog(boto3.client("glue"), args["catalog_database"],
                           args["catalog_table"])
    return JsonFileCatalog(target, LOCAL_CATALOG_KEY)


def settings_from(args: dict[str, str]) -> Settings:
    try:
        return Settings(
            lookback_days=int(args["lookback_days"]),
            target_file_bytes=int(float(args["target_file_mb"]) * 1_048_576),
            bytes_per_row=float(args["bytes_per_row"]),
            retain=timedelta(hours=float(args["retain_hours"])),
            compression=args["compression"],
        )
    except ValueError as exc:
        raise SystemExit(f"{JOB_NAME}: bad numeric argument: {exc}") from None


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> int:
    args = resolve_args(sys.argv[1:] if argv is None else argv, SPEC, prog=JOB_NAME)
    settings = settings_from(args)
    source, target = store_for(args["source"]), store_for(args["target"])
    with job_session(JOB_NAME, args, spark, uris=(source.root_uri, target.root_uri)) as session:
        report = compact(session, source, target, catalog_for(args, target), settings)
    print(json.dumps({"job": JOB_NAME, **asdict(report)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
