"""The attribution job (glue_jobs/attribute_events.py) on a small lake on the local file system:
curated events and audit partitions published through their JSON catalogs as the compactions
publish them, the job run as Glue runs it (main with the job's arguments), its table read only
at its catalog's current locations."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from glue_jobs import attribute_events
from glue_jobs.attribution_days import (
    ATTRIBUTION_LOCAL_CATALOG_KEY,
    ATTRIBUTION_TABLE,
    Inputs,
    plan,
)
from glue_jobs.audit_io import read_audit_table, write_audit_runs
from glue_jobs.audit_schema import AUDIT_COLUMNS
from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.compact_audit import audit_catalog
from glue_jobs.curated_io import read_published, write_runs
from glue_jobs.layout import (
    LOCAL_CATALOG_KEY,
    audit_run_prefix,
    new_run_id,
    run_prefix,
)
from glue_jobs.storage import LocalStore
from hdfs_events.audit import AuditRecord, LineSource, parse_line
from hdfs_events.event import EventType, HdfsEvent, INodeType
from stacks.lake_catalog import DELETED_EXAMPLE_PATH, HISTORY_EXAMPLE_PATH, NAMED_QUERIES
from tests.integration.glue.frames import curated_frame

C = "c1"
# One second before midnight UTC, 2026-11-26 -> 27.
T0 = int(datetime(2026, 11, 26, 23, 59, 59, tzinfo=UTC).timestamp() * 1000)


def ms_day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def line(offset: int, ms: int, user: str, cmd: str, src: str, dst: str = "null",
         perm: str = "null") -> AuditRecord:
    stamp = datetime.fromtimestamp((T0 + ms) / 1000, UTC)
    text = (f"{stamp:%Y-%m-%d %H:%M:%S},{stamp.microsecond // 1000:03d} INFO "
            f"FSNamesystem.audit: allowed=true\tugi={user} (auth:SIMPLE)\tip=/10.0.0.1\t"
            f"cmd={cmd}\tsrc={src}\tdst={dst}\tperm={perm}\tproto=rpc")
    return parse_line(text, C, LineSource("nn1", "f1", offset))


EVENTS = [
    HdfsEvent(cluster=C, txid=1, index=0, type=EventType.CREATE, path="/d/a", timestamp=T0,
              ctime=T0, inode_type=INodeType.FILE, owner="alice", group="g", perms="0644"),
    HdfsEvent(cluster=C, txid=2, index=0, type=EventType.CLOSE, path="/d/a", timestamp=T0 + 10,
              size=1),
    # its line is written just after midnight, and reaches the lake later
    HdfsEvent(cluster=C, txid=3, index=0, type=EventType.UNLINK, path="/d/a",
              timestamp=T0 + 998),
    HdfsEvent(cluster=C, txid=4, index=0, type=EventType.RENAME, path="/d/b",
              dst_path="/d/c", timestamp=T0 + 1500),
]
ON_TIME = [line(0, 2, "alice", "create", "/d/a", perm="alice:g:rw-r--r--"),
           line(200, 1502, "carol", "rename", "/d/b", "/d/c")]
LATE = [line(100, 1003, "bob", "delete", "/d/a")]


def publish_events(spark, lake: LocalStore, events: list[HdfsEvent]) -> None:
    run_id = new_run_id()
    rows = curated_frame(spark, [(e, ms_day(e.timestamp or T0)) for e in events])
    write_runs(rows, lake.root_uri, run_id, "zstd")
    JsonFileCatalog(lake, LOCAL_CATALOG_KEY).publish(
        {(C, d): lake.root_uri + run_prefix(C, d, run_id)
         for d in {ms_day(e.timestamp or T0) for e in events}})


def publish_audit(spark, lake: LocalStore, records: list[AuditRecord]) -> None:
    """A new run of each touched day holding its old rows and the new ones, as the audit
    compaction republishes a partition."""
    catalog = audit_catalog("", "audit", lake)
    old = [r.asDict() for r in read_audit_table(spark, catalog.locations()).collect()]
    rows = old + [{**{c: r.to_json()[c] for c in AUDIT_COLUMNS}, "dt": ms_day(r.time or 0)}
                  for r in records]
    frame = spark.createDataFrame(
        [tuple(r[c] for c in (*AUDIT_COLUMNS, "dt")) for r in rows],
        read_audit_table(spark, {}).schema)
    run_id = new_run_id()
    write_audit_runs(frame, lake.root_uri, run_id, "zstd")
    catalog.publish({(C, d): lake.root_uri + audit_run_prefix(C, d, run_id)
                     for d in {ms_day(r.time or 0) for r in records}})


def run_job(spark, lake: LocalStore) -> dict:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert attribute_events.main(["--source", lake.root_uri, "--target", lake.root_uri],
                                     spark=spark) == 0
    return json.loads(out.getvalue())


def table(spark, lake: LocalStore) -> list[tuple]:
    locations = JsonFileCatalog(lake, ATTRIBUTION_LOCAL_CATALOG_KEY,
                                ATTRIBUTION_TABLE).locations()
    if not locations:
        return []
    rows = spark.read.parquet(*locations.values()).withColumn(
        "dt", F.regexp_extract(F.col("_metadata.file_path"), r"dt=([^/]+)/", 1))
    return sorted((r["txid"], r["index"], r["user"], r["dt"]) for r in rows.collect())


@pytest.fixture
def lake(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "lake")


def test_a_late_audit_line_attributes_its_event_on_the_next_run_and_nothing_twice(spark, lake):
    """And the saved queries that name who made a change show it."""
    publish_events(spark, lake, EVENTS)
    publish_audit(spark, lake, ON_TIME)
    first = run_job(spark, lake)
    assert first["days"] == [f"{C}/2026-11-26", f"{C}/2026-11-27"]
    assert table(spark, lake) == [(1, 0, "alice", "2026-11-26"), (2, 0, "alice", "2026-11-26"),
                                  (4, 0, "carol", "2026-11-27")]

    publish_audit(spark, lake, LATE)  # the next day's audit partition, with bob's delete
    second = run_job(spark, lake)
    assert f"{C}/2026-11-26" in second["days"]  # the day before the changed audit day
    assert table(spark, lake) == [(1, 0, "alice", "2026-11-26"), (2, 0, "alice", "2026-11-26"),
                                  (3, 0, "bob", "2026-11-26"), (4, 0, "carol", "2026-11-27")]

    assert run_job(spark, lake)["days"] == []  # nothing new: nothing recomputed
    assert len(table(spark, lake)) == 4
    # The events the table attributes are the curated table's, once each.
    events = read_published(spark, JsonFileCatalog(lake, LOCAL_CATALOG_KEY).locations()
                            .values()).count()
    assert events == len(EVENTS)

    register_tables(spark, lake)
    history = saved_query(spark, "history-of-one-path", HISTORY_EXAMPLE_PATH, "/d/a")
    assert [(r["txid"], r["type"], r["user"]) for r in history] == [
        (1, "CREATE", "alice"), (2, "CLOSE", "alice"), (3, "UNLINK", "bob")]
    deleted = saved_query(spark, "who-deleted-what-under-a-path", DELETED_EXAMPLE_PATH, "/d")
    assert [(r["path"], r["user"], r["client_ip"]) for r in deleted] == [
        ("/d/a", "bob", "10.0.0.1")]


def register_tables(spark, lake: LocalStore) -> None:
    """The Glue tables the saved queries name, as Spark SQL views over the catalogs'
    locations."""
    read_published(spark, JsonFileCatalog(lake, LOCAL_CATALOG_KEY).locations().values()) \
        .createOrReplaceTempView("events")
    locations = JsonFileCatalog(lake, ATTRIBUTION_LOCAL_CATALOG_KEY,
                                ATTRIBUTION_TABLE).locations()
    file = F.col("_metadata.file_path")
    (spark.read.parquet(*locations.values())
     .withColumn("cluster", F.regexp_extract(file, r"cluster=([^/]+)/", 1))
     .withColumn("dt", F.regexp_extract(file, r"dt=([^/]+)/", 1))
     .createOrReplaceTempView("attribution"))


def saved_query(spark, query_id: str, example_path: str, path: str) -> list:
    """The saved query as stored, its example path edited and `current_date` the lake's next
    day, as a user runs it."""
    sql = NAMED_QUERIES[query_id][1].replace(f"'{example_path}", f"'{path}")
    return spark.sql(sql.replace("current_date", "DATE '2026-11-28'")).collect()


def test_plan_recomputes_changed_days_and_their_neighbours_with_events():
    seen = Inputs({(C, "2026-11-25"): "e1", (C, "2026-11-26"): "e2"},
                  {(C, "2026-11-26"): "a1"})
    now = Inputs({(C, "2026-11-25"): "e1", (C, "2026-11-26"): "e2", (C, "2026-11-28"): "e3"},
                 {(C, "2026-11-26"): "a1", (C, "2026-11-27"): "a2"})
    p = plan(now, seen)
    assert p.write == ((C, "2026-11-26"), (C, "2026-11-28"))
    assert p.read == tuple((C, f"2026-11-{d}") for d in (25, 26, 27, 28, 29))
    assert plan(now, now).write == ()
