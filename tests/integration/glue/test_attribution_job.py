"""The attribution job (glue_jobs/attribute_events.py) on a small lake on the local file system:
curated events and audit partitions published through their JSON catalogs as the compactions
publish them, the job run as Glue runs it (main with the job's arguments), its table read only
at its catalog's current locations, its lines (glue_jobs/attribution_log.py) sent to the moto
server's CloudWatch Logs over HTTP and read back with FilterLogEvents. moto runs no Logs
Insights query: tests/unit/glue/test_attribution_log.py checks the saved queries' keys."""

from __future__ import annotations

import contextlib
import io
import json
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from pyspark.sql import functions as F

from glue_jobs import attribute_events
from glue_jobs.attribution import ATTRIBUTION_SCHEMA
from glue_jobs.attribution_days import Inputs, plan
from glue_jobs.attribution_log import log_lines, logs_client, put_lines
from glue_jobs.audit_io import read_audit_table, write_audit_runs
from glue_jobs.audit_schema import AUDIT_COLUMNS
from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.compact_audit import audit_catalog
from glue_jobs.curated_io import read_published, write_runs
from glue_jobs.layout import ATTRIBUTION_LOCAL_CATALOG_KEY, LOCAL_CATALOG_KEY
from glue_jobs.storage import LocalStore
from hdfs_events.audit import AuditRecord, LineSource, parse_line
from hdfs_events.event import EventType, HdfsEvent, INodeType
from hdfs_events.lake_layout import ATTRIBUTION_TABLE, AUDIT_PREFIX, EVENTS_PREFIX, new_run_id, run_prefix
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
        {(C, d): lake.root_uri + run_prefix(EVENTS_PREFIX, C, d, run_id)
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
    catalog.publish({(C, d): lake.root_uri + run_prefix(AUDIT_PREFIX, C, d, run_id)
                     for d in {ms_day(r.time or 0) for r in records}})


def run_job(spark, lake: LocalStore, group: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert attribute_events.main(["--source", lake.root_uri, "--target", lake.root_uri,
                                      "--log_group", group], spark=spark) == 0
    return json.loads(out.getvalue())


def logged(group: str) -> list[dict]:
    """Every line of the group, in the order CloudWatch holds them."""
    pages = boto3.client("logs").get_paginator("filter_log_events").paginate(
        logGroupName=group)
    return [json.loads(e["message"]) for page in pages for e in page["events"]]


def streams(group: str) -> list[str]:
    return [s["logStreamName"] for s in
            boto3.client("logs").describe_log_streams(logGroupName=group)["logStreams"]]


def by_txid(lines: list[dict]) -> list[tuple]:
    return sorted((x["txid"], x["index"], x["type"], x.get("user")) for x in lines)


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


@pytest.fixture
def group(lake_endpoint: str) -> str:
    name = f"/hdfs-events/test/attribution-{uuid.uuid4().hex[:8]}"
    boto3.client("logs").create_log_group(logGroupName=name)
    return name


def test_a_late_audit_line_attributes_its_event_on_the_next_run_and_nothing_twice(
        spark, lake, group):
    """Each attributed event is logged once and a late line adds only its event; the saved
    queries that name who made a change show it."""
    publish_events(spark, lake, EVENTS)
    publish_audit(spark, lake, ON_TIME)
    first = run_job(spark, lake, group)
    assert first["days"] == [f"{C}/2026-11-26", f"{C}/2026-11-27"]
    assert table(spark, lake) == [(1, 0, "alice", "2026-11-26"), (2, 0, "alice", "2026-11-26"),
                                  (4, 0, "carol", "2026-11-27")]
    lines = logged(group)
    assert first["lines_logged"] == len(lines) == 3
    assert by_txid(lines) == [(1, 0, "CREATE", "alice"), (2, 0, "CLOSE", "alice"),
                              (4, 0, "RENAME", "carol")]
    rename = next(x for x in lines if x["txid"] == 4)
    assert rename == {"cluster": C, "txid": 4, "index": 0, "type": "RENAME", "path": "/d/b",
                      "dst_path": "/d/c", "timestamp": T0 + 1500, "user": "carol",
                      "auth": "SIMPLE", "client_ip": "10.0.0.1"}
    assert all("dst_path" not in x for x in lines if x["type"] != "RENAME")

    # The same events republished at a new location: both days are recomputed, no answer
    # changed, so nothing is logged (and no stream is opened).
    publish_events(spark, lake, EVENTS)
    again = run_job(spark, lake, group)
    assert again["days"] and again["lines_logged"] == 0
    assert len(logged(group)) == 3
    assert streams(group) == [first["run_id"]]

    publish_audit(spark, lake, LATE)  # the next day's audit partition, with bob's delete
    second = run_job(spark, lake, group)
    assert f"{C}/2026-11-26" in second["days"]  # the day before the changed audit day
    assert table(spark, lake) == [(1, 0, "alice", "2026-11-26"), (2, 0, "alice", "2026-11-26"),
                                  (3, 0, "bob", "2026-11-26"), (4, 0, "carol", "2026-11-27")]
    lines = logged(group)
    assert second["lines_logged"] == 1
    assert by_txid(lines[3:]) == [(3, 0, "UNLINK", "bob")]
    assert len(lines) == 4

    last = run_job(spark, lake, group)
    assert last["days"] == [] and last["lines_logged"] == 0  # nothing new: nothing recomputed
    assert len(table(spark, lake)) == 4
    assert len(logged(group)) == 4
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


def test_only_changed_answers_are_lines_and_a_lost_user_is_a_line_without_one(spark):
    def rows(*who: tuple[int, str]):
        return spark.createDataFrame(
            [(C, txid, 0, user, "SIMPLE", None, "10.0.0.1", None, "nn1", "f1", txid)
             for txid, user in who], ATTRIBUTION_SCHEMA)

    events = curated_frame(spark, [(e, ms_day(e.timestamp or T0)) for e in EVENTS])
    previous = rows((1, "alice"), (3, "bob"), (4, "carol"))
    now = rows((1, "alice"), (2, "alice"), (4, "dave"))  # 2 new, 3 lost, 4 changed
    lines = [json.loads(r["line"]) for r in log_lines(now, previous, events).collect()]
    assert by_txid(lines) == [(2, 0, "CLOSE", "alice"), (3, 0, "UNLINK", None),
                              (4, 0, "RENAME", "dave")]
    lost = next(x for x in lines if x["txid"] == 3)
    assert set(lost) == {"cluster", "txid", "index", "type", "path", "timestamp"}
    assert log_lines(previous, previous, events).count() == 0


def test_lines_cloudwatch_refuses_fail_the_run(group: str):
    logs = logs_client()
    logs.create_log_stream(logGroupName=group, logStreamName="run")
    assert put_lines(logs, group, "run", ['{"txid": 1}', '{"txid": 2}']) == 2
    # A batch stamped 15 days back: CloudWatch Logs refuses events older than 14 days and
    # says so in the response, with HTTP 200.
    with pytest.raises(RuntimeError, match="rejected attribution lines"):
        put_lines(logs, group, "run", ['{"txid": 3}'], clock=lambda: time.time() - 15 * 86400)


def test_plan_recomputes_changed_days_and_their_neighbours_with_events():
    seen = Inputs({(C, "2026-11-25"): "e1", (C, "2026-11-26"): "e2"},
                  {(C, "2026-11-26"): "a1"})
    now = Inputs({(C, "2026-11-25"): "e1", (C, "2026-11-26"): "e2", (C, "2026-11-28"): "e3"},
                 {(C, "2026-11-26"): "a1", (C, "2026-11-27"): "a2"})
    p = plan(now, seen)
    assert p.write == ((C, "2026-11-26"), (C, "2026-11-28"))
    assert p.read == tuple((C, f"2026-11-{d}") for d in (25, 26, 27, 28, 29))
    assert plan(now, now).write == ()
