"""One run of the audit compaction: I/O at the edges around the pure transforms of
glue_jobs.audit_lines. The entry script (glue_jobs/compact_audit.py) parses the arguments,
builds the session and calls compact_audit().

One run: list raw-audit/ against its own watermark -> read each new object's lines through
Hadoop's gzip codec (if that fails, find the damaged objects, set them apart whole and read the
rest) -> parse each line with the record's explicit schema and check it (bad lines to
quarantine/glue/compact_audit/lines/) -> keep one copy per line identity (cluster, host,
file_id, offset), none whose identity is already published within +-lookback_days -> write each
partition that gains rows whole (new and published rows) to a fresh run prefix -> switch the
catalog -> advance the watermark -> remove superseded runs past their grace period. A run killed
before the switch published nothing: its run prefixes are named by no catalog entry, and its
objects are read again by the next run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from glue_jobs import compaction, raw_objects, watermark
from glue_jobs.audit_io import read_audit, write_audit_runs
from glue_jobs.audit_lines import (
    audit_rows,
    first_copies,
    not_published,
    parse_audit_lines,
    quarantined_lines,
)
from glue_jobs.catalog import PartitionCatalog, PartitionKey
from glue_jobs.curated_io import remove_superseded_runs
from glue_jobs.layout import QUARANTINE_AUDIT_PREFIX
from glue_jobs.storage import LakeStore
from hdfs_events.lake_layout import AUDIT_PREFIX, AUDIT_RAW_PREFIX, new_run_id, raw_key_in_path, run_prefix

# The text source's line plus the raw layout's partition directories, all strings (Spark would
# infer dt as a date and hour as an int otherwise).
_RAW_TEXT_SCHEMA = "value string, cluster string, dt string, hour string"
_RAW_KEY_TAIL = raw_key_in_path(AUDIT_RAW_PREFIX)


@dataclass(frozen=True, slots=True)
class AuditCompactionSettings:
    lookback_days: int = 1
    retain: timedelta = timedelta(hours=24)
    compression: str = "zstd"


@dataclass(frozen=True, slots=True)
class AuditCompactionReport:
    run_id: str
    objects_read: int = 0
    lines_read: int = 0  # lines that are table rows, duplicates included
    records_added: int = 0
    duplicates_dropped: int = 0
    quarantined_objects: int = 0
    quarantined_lines: int = 0
    ignored_objects: int = 0  # keys outside the raw-audit layout, left where they are
    partitions_published: int = 0
    runs_removed: int = 0


@dataclass(frozen=True, slots=True)
class _Lines:
    parsed: DataFrame  # parse_audit_lines' frame, persisted
    good: dict[PartitionKey, int]  # lines that are table rows, per partition
    bad: int


def compact_audit(spark: SparkSession, source: LakeStore, target: LakeStore,
                  catalog: PartitionCatalog, settings: AuditCompactionSettings, *,
                  run_id: str | None = None, now: datetime | None = None
                  ) -> AuditCompactionReport:
    now = now or datetime.now(UTC)
    run_id = run_id or new_run_id(now)
    known = watermark.load(target, watermark.RAW_AUDIT)
    listing = list(source.list_objects(AUDIT_RAW_PREFIX))
    todo, strays = watermark.pending(listing, known, watermark.RAW_AUDIT)
    report = AuditCompactionReport(run_id, objects_read=len(todo), ignored_objects=len(strays))
    if not todo:
        return report
    lines, problems = _read_lines(spark, source, todo, (o.key for o in listing))
    quarantined = raw_objects.quarantine_objects(source, target, QUARANTINE_AUDIT_PREFIX,
                                                 run_id, problems)
    report = replace(report, quarantined_objects=quarantined)
    if lines is not None:
        try:
            report = _publish(spark, target, catalog, settings, run_id, now, lines, report)
        finally:
            lines.parsed.unpersist()
    outcomes = {o.info.key: (o, f"quarantined: {problems[o.info.key]}"
                             if o.info.key in problems else watermark.OUTCOME_COMPACTED)
                for o in todo}
    watermark.advance(target, known, outcomes, watermark.RAW_AUDIT)
    return report


def _read_lines(spark: SparkSession, source: LakeStore, todo: list[watermark.RawObject],
                listing: Iterable[str]) -> tuple[_Lines | None, dict[str, str]]:
    """(the parsed lines, None when no object is readable; {key: problem} of the unreadable
    objects). Every object is read as the agent wrote it; only when the read fails is each one
    checked, the damaged ones set apart and the rest read again."""
    problems = {o.info.key: compaction.EMPTY_OBJECT for o in todo if o.info.size == 0}
    readable = [o.info.key for o in todo if o.info.key not in problems]
    listed = set(listing)
    while readable:
        paths = compaction.read_paths(readable, listed)
        parsed = (_raw_lines(spark, source, paths).transform(parse_audit_lines)
                  .persist(StorageLevel.MEMORY_AND_DISK))
        try:
            # One pass fills the cache and counts the good lines per partition and the bad.
            good_line = F.col("reason").isNull()
            tally = (parsed.select(
                good_line.alias("good"),
                F.when(good_line, F.col("record.cluster")).alias("cluster"),
                F.when(good_line, compaction.curated_dt(F.col("record.time"))).alias("dt"))
                .groupBy("good", "cluster", "dt").count().collect())
        except Exception:  # any failure of the read: damaged objects explain it, else raised
            parsed.unpersist()
            damaged = _damaged_objects(spark, source, paths)
            if not damaged:
                raise
            # A damaged object written into a folder read whole after the listing is not this
            # run's: its folder is read key by key from here on, and the next run lists it.
            listed |= damaged.keys()
            problems |= {k: why for k, why in damaged.items() if k in readable}
            readable = [k for k in readable if k not in damaged]
            continue
        good = {(r["cluster"], r["dt"]): r["count"] for r in tally if r["good"]}
        bad = sum(r["count"] for r in tally if not r["good"])
        return _Lines(parsed, good, bad), problems
    return None, problems


def _publish(spark: SparkSession, target: LakeStore, catalog: PartitionCatalog,
             settings: AuditCompactionSettings, run_id: str, now: datetime, lines: _Lines,
             report: AuditCompactionReport) -> AuditCompactionReport:
    if lines.bad:
        (quarantined_lines(lines.parsed).coalesce(1).write.mode("overwrite")
         .option("compression", "gzip")
         .json(f"{target.root_uri}{QUARANTINE_AUDIT_PREFIX}lines/run={run_id}/"))
    report = replace(report, lines_read=sum(lines.good.values()), quarantined_lines=lines.bad)
    if not lines.good:
        return report
    published = catalog.locations()
    near = compaction.lookback_partitions(lines.good, published, settings.lookback_days)
    new = (lines.parsed.transform(audit_rows).transform(first_copies)
           .transform(not_published(read_audit(spark, [published[k] for k in near])))
           .drop("object").persist(StorageLevel.MEMORY_AND_DISK))
    try:
        added = {(r["cluster"], r["dt"]): r["count"]
                 for r in new.groupBy("cluster", "dt").count().collect()}
        if added:
            # Each partition that gains rows is written whole to its new run: its new rows and
            # its published ones, so the switch replaces one complete location by another.
            kept = read_audit(spark, [published[k] for k in added if k in published])
            write_audit_runs(new.unionByName(kept), target.root_uri, run_id,
                             settings.compression)
            catalog.publish({k: target.root_uri + run_prefix(AUDIT_PREFIX, *k, run_id) for k in added})
    finally:
        new.unpersist()
    removed = remove_superseded_runs(target, added, catalog.locations(), now, settings.retain,
                                     AUDIT_PREFIX)
    records_added = sum(added.values())
    return replace(report, records_added=records_added,
                   duplicates_dropped=report.lines_read - records_added,
                   partitions_published=len(added), runs_removed=removed)


def _raw_lines(spark: SparkSession, source: LakeStore, paths: list[str]) -> DataFrame:
    """(object, raw_cluster, raw_dt, value) of the lines of the objects at `paths` (keys and
    folders, compaction.read_paths); cluster and dt from the key's partition directories."""
    return (raw_objects.raw_reader(spark, source, AUDIT_RAW_PREFIX).schema(_RAW_TEXT_SCHEMA)
            .text([source.root_uri + p for p in paths])
            .select(F.regexp_extract(F.col("_metadata.file_path"), _RAW_KEY_TAIL, 1)
                    .alias("object"),
                    F.col("cluster").alias("raw_cluster"), F.col("dt").alias("raw_dt"), "value"))


def _damaged_objects(spark: SparkSession, source: LakeStore, paths: list[str]
                     ) -> dict[str, str]:
    """{key: problem} of the objects at `paths` whose gzip stream cannot be read."""
    files = raw_objects.raw_reader(spark, source, AUDIT_RAW_PREFIX).format("binaryFile").load(
        [source.root_uri + p for p in paths])
    return {raw_objects.raw_key(r["path"], AUDIT_RAW_PREFIX): r["problem"]
            for r in compaction.object_problems(files).collect()}


