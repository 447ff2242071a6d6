"""`hdfs-events quarantine redrive` through the real consumer handler on moto server: a message a
v1 consumer quarantined (envelope major 2) is redriven after the upgrade (SUPPORTED_VERSIONS
with 2, monkeypatched as the upgrade), once in the lake and the index however often the redrive
runs or wherever it stops; a record whose recorded sender is not its cluster's principal is
refused again; the index reports a range it already passed."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from hdfs_events import envelope
from hdfs_events.quarantine import INGEST_PREFIX, REDRIVEN_PREFIX
from lambdas.ingest import handler
from lambdas.ingest.lake_store import S3Lake
from tests.kit.index_builders import live, mkdir, mkfile
from tests.kit.ingest_aws import BUCKET, lake_lines
from tests.kit.ingest_builders import manifests, pack
from tests.kit.lambda_events import AGENT_SENDER_IDS, Context, event, record
from tests.kit.next_agent import next_agent_message
from tests.kit.replay import in_order_state


def _keys(s3: Any, prefix: str) -> list[str]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def _lake(s3: Any) -> dict[str, list[str]]:
    return {k: lake_lines(s3.get_object(Bucket=BUCKET, Key=k)["Body"].read())
            for k in _keys(s3, "raw/")}


def _redrive(keys: list[str]) -> list[dict[str, Any]]:
    return handler.handler({"redrive": {"keys": keys}}, Context())["redrive"]


def _upgrade(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(envelope, "SUPPORTED_VERSIONS", frozenset({1, 2}))


def test_a_message_quarantined_by_an_old_consumer_is_redriven_once_after_the_upgrade(
        aws, ddb, monkeypatch) -> None:
    s3 = boto3.client("s3")
    events = [mkdir(1, "/data"), mkdir(2, "/data/a"), mkfile(3, "/data/a/f")]
    sent = next_agent_message(events, group_id="prod:data", major=2)
    handler.handler(event(sent), Context())
    (key,) = _keys(s3, INGEST_PREFIX)
    assert _keys(s3, "raw/") == []

    _upgrade(monkeypatch)
    # The first redrive stops after the lake and the arrival, before the record is moved.
    real_delete = S3Lake.delete
    monkeypatch.setattr(S3Lake, "delete", lambda self, k: (_ for _ in ()).throw(
        ConnectionError("the invocation ended here")))
    with pytest.raises(ConnectionError):
        _redrive([key])
    monkeypatch.setattr(S3Lake, "delete", real_delete)
    after_crash = _lake(s3)

    (result,) = _redrive([key])

    assert result["outcome"] == "ingested" and result["index"] == "pending"
    assert _keys(s3, INGEST_PREFIX) == []
    moved = json.loads(s3.get_object(Bucket=BUCKET, Key=result["redriven_key"])["Body"].read())
    assert moved["redrive"]["previous_reason"].startswith("unsupported envelope version 2")
    assert _keys(s3, REDRIVEN_PREFIX) == [result["redriven_key"]]
    # Each event in the lake once, the same object the crashed run wrote.
    assert _lake(s3) == after_crash
    assert sorted(json.loads(x)["txid"] for lines in after_crash.values() for x in lines) == [
        1, 2, 3]
    # Its range's manifest comes: the index applies it in order.
    handler.handler(event(*manifests(pack(events))), Context())
    aws.apply_requests(handler.handler)
    assert live(ddb) == in_order_state(events, "/data")

    # A second redrive finds nothing to do and changes nothing.
    assert _redrive([key]) == [{"key": key, "outcome": "missing", "index": None,
                                "redriven_key": None,
                                "reason": "no such record: redriven already, or expired"}]
    aws.apply_requests(handler.handler)
    assert _lake(s3) == after_crash
    assert live(ddb) == in_order_state(events, "/data")


def test_a_redriven_message_whose_range_the_index_passed_is_reported_for_verify(
        aws, ddb, monkeypatch) -> None:
    s3 = boto3.client("s3")
    before, lost, after = ([mkdir(1, "/data"), mkdir(2, "/data/a")], [mkfile(3, "/data/a/f")],
                           [mkfile(4, "/data/a/g")])
    first, later = pack(before), pack(after)
    quarantined = next_agent_message(lost, group_id="prod:data", major=2)
    handler.handler(event(*first, quarantined, *later,
                          *manifests([*first, *pack(lost), *later])), Context())
    aws.apply_requests(handler.handler)
    # The range went on without the quarantined message.
    assert live(ddb) == in_order_state([*before, *after], "/data")
    (key,) = _keys(s3, INGEST_PREFIX)

    _upgrade(monkeypatch)
    (result,) = _redrive([key])
    aws.apply_requests(handler.handler)

    assert (result["outcome"], result["index"]) == ("ingested", "passed")
    assert sorted(json.loads(x)["txid"] for lines in _lake(s3).values() for x in lines) == [
        1, 2, 3, 4]
    # What a user notices: the file is in the lake, not in the index until verify repairs it.
    assert "/data/a/f" not in live(ddb)
    assert live(ddb) == in_order_state([*before, *after], "/data")


def test_a_redrive_of_a_record_whose_sender_is_not_the_clusters_principal_is_refused(
        aws, ddb, monkeypatch) -> None:
    s3 = boto3.client("s3")
    (sent,) = pack([mkdir(1, "/data")])
    foreign = record(sent, sender_id=AGENT_SENDER_IDS["dev"])  # a prod group, dev's principal
    handler.handler({"Records": [foreign]}, Context())
    (key,) = _keys(s3, INGEST_PREFIX)

    (result,) = _redrive([key])
    aws.apply_requests(handler.handler)

    assert result["outcome"] == "quarantined"
    assert f"sender {AGENT_SENDER_IDS['dev']!r} may not send events of cluster 'prod'" in (
        result["reason"])
    assert _keys(s3, INGEST_PREFIX) == [key] and _keys(s3, "raw/") == []
    assert live(ddb) == {}


def test_a_redrive_names_records_of_the_quarantine_only(ddb) -> None:
    (sent,) = pack([mkdir(1, "/data")])
    handler.handler(event(sent), Context())
    (raw_key,) = _keys(boto3.client("s3"), "raw/")
    results = _redrive([raw_key, "quarantine/ingest/dt=2026-11-26/../../raw/x.json"])
    assert [r["outcome"] for r in results] == ["refused", "refused"]
