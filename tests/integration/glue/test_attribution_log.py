"""The attribution job's CloudWatch Logs lines (glue_jobs/attribution_log.py): the job run as Glue
runs it over a small lake on the local file system, its lines sent to the moto server's
CloudWatch Logs over HTTP and read back with FilterLogEvents. moto runs no Logs Insights query,
so the saved queries are checked against the lines' keys, not run."""

from __future__ import annotations

import contextlib
import io
import json
import re
import time
import uuid
from pathlib import Path

import boto3
import pytest

from glue_jobs import attribute_events
from glue_jobs.attribution import ATTRIBUTION_SCHEMA
from glue_jobs.attribution_log import (
    EVENT_OVERHEAD,
    LINE_FIELDS,
    MAX_BATCH_BYTES,
    MAX_BATCH_EVENTS,
    MAX_EVENT_BYTES,
    batches,
    log_lines,
    logs_client,
    put_lines,
)
from glue_jobs.storage import LocalStore
from stacks.monitoring import ATTRIBUTION_LOGS_QUERIES
from tests.integration.glue.frames import curated_frame
from tests.integration.glue.test_attribution_job import (
    EVENTS,
    LATE,
    ON_TIME,
    T0,
    C,
    ms_day,
    publish_audit,
    publish_events,
)


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


def by_txid(lines: list[dict]) -> list[tuple]:
    return sorted((x["txid"], x["index"], x["type"], x.get("user")) for x in lines)


@pytest.fixture
def group(lake_endpoint: str) -> str:
    name = f"/hdfs-events/test/attribution-{uuid.uuid4().hex[:8]}"
    boto3.client("logs").create_log_group(logGroupName=name)
    return name


def test_each_attributed_event_is_logged_once_and_a_late_line_adds_only_its_event(
        spark, tmp_path: Path, group: str):
    lake = LocalStore(tmp_path / "lake")
    publish_events(spark, lake, EVENTS)
    publish_audit(spark, lake, ON_TIME)
    first = run_job(spark, lake, group)
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
    streams = boto3.client("logs").describe_log_streams(logGroupName=group)["logStreams"]
    assert [s["logStreamName"] for s in streams] == [first["run_id"]]

    publish_audit(spark, lake, LATE)  # bob's delete, written after midnight, arrives late
    late = run_job(spark, lake, group)
    lines = logged(group)
    assert late["lines_logged"] == 1
    assert by_txid(lines[3:]) == [(3, 0, "UNLINK", "bob")]
    assert len(lines) == 4


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


def test_batches_keep_within_put_log_events_limits():
    small = ["x" * 10] * (MAX_BATCH_EVENTS + 1)
    assert [len(b) for b in batches(small)] == [MAX_BATCH_EVENTS, 1]
    big = ["y" * 200_000] * 6
    sizes = [sum(len(m) + EVENT_OVERHEAD for m in b) for b in batches(big)]
    assert sizes == [5 * (200_000 + EVENT_OVERHEAD), 200_000 + EVENT_OVERHEAD]
    assert max(sizes) <= MAX_BATCH_BYTES
    with pytest.raises(ValueError, match="event limit"):
        list(batches(["z" * (MAX_EVENT_BYTES + 1)]))


def test_lines_cloudwatch_refuses_fail_the_run(group: str):
    logs = logs_client()
    logs.create_log_stream(logGroupName=group, logStreamName="run")
    assert put_lines(logs, group, "run", ['{"txid": 1}', '{"txid": 2}']) == 2
    # A batch stamped 15 days back: CloudWatch Logs refuses events older than 14 days and
    # says so in the response, with HTTP 200.
    with pytest.raises(RuntimeError, match="rejected attribution lines"):
        put_lines(logs, group, "run", ['{"txid": 3}'], clock=lambda: time.time() - 15 * 86400)


# Logs Insights words the saved queries use; anything else a query names must be a line key.
_QUERY_WORDS = {"fields", "filter", "stats", "sort", "dedup", "limit", "by", "as", "asc",
                "desc", "and", "or", "not", "like", "in", "count", "latest", "coalesce",
                "ispresent"}


def test_the_saved_queries_name_only_keys_the_lines_carry():
    for name, query in ATTRIBUTION_LOGS_QUERIES.items():
        text = re.sub(r"'[^']*'|/(?:\\.|[^/\\])+/|@\w+|#.*", " ", query)
        aliases = set(re.findall(r"\bas\s+(\w+)", text))
        named = set(re.findall(r"\b[A-Za-z_]\w*\b", text)) - aliases
        named = {w for w in named if w.lower() not in _QUERY_WORDS and not w.isdigit()}
        assert named <= set(LINE_FIELDS), (name, named - set(LINE_FIELDS))
        # one answer per event: the latest line of each (cluster, txid, index)
        assert ("dedup cluster, txid, index" in query
                or "by cluster, txid, index" in query), name
