"""`hdfs-events index status`: how far the index got and what the next range waits for, read
from the sequencer's items (moto in-process), through the real handler and CLI."""

from __future__ import annotations

import json

import boto3

from hdfs_events_cli import cli
from hdfs_events_cli.index_status import describe, read_status
from lambdas.ingest import handler
from tests.kit.ingest_aws import TABLE
from tests.kit.ingest_builders import manifests, pack, sample_events
from tests.kit.lambda_events import Context, event


def test_status_names_the_message_a_range_waits_for_then_says_caught_up(aws, capsys) -> None:
    events = sample_events()
    sent = pack(events, per_message=10)
    held_back, rest = sent[3], sent[:3] + sent[4:]
    handler.handler(event(*rest, *manifests(sent)), Context())
    aws.apply_requests(handler.handler)

    status = read_status(boto3.client("dynamodb"), TABLE, "prod")
    assert status.waiting and status.missing == (held_back.dedup_id,)
    assert status.next_range == (None, events[-1].txid) and status.messages == len(sent)
    assert status.txid is None  # nothing applied: the first range is incomplete
    capsys.readouterr()
    assert cli.main(["index", "status", "--cluster", "prod", "--table", TABLE]) == 0
    out = capsys.readouterr().out
    assert "WAITING" in out and held_back.dedup_id in out and "DLQ" in out

    handler.handler(event(held_back), Context())
    aws.apply_requests(handler.handler)
    status = read_status(boto3.client("dynamodb"), TABLE, "prod")
    assert not status.waiting and status.next_range is None
    assert (status.txid, status.index) == (events[-1].txid, None)
    assert describe(status, 0)[-1] == "caught up: no manifest stored beyond the position"
    capsys.readouterr()
    assert cli.main(["index", "status", "--cluster", "prod", "--table", TABLE, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["txid"] == events[-1].txid and doc["waiting"] is False


def test_status_of_a_cluster_never_seen(aws) -> None:
    status = read_status(boto3.client("dynamodb"), TABLE, "other")
    assert status.txid is None and status.next_range is None and not status.waiting
    assert describe(status, 0) == ["cluster other: nothing applied yet",
                                   "caught up: no manifest stored beyond the position"]
