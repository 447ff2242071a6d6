"""`hdfs-events quarantine redrive` on moto server: the CLI lists and filters the consumer's
quarantine records in the lake bucket and sends their keys to the consumer. moto runs a Lambda
function only through Docker, so the invocation goes to the real handler in-process (a double
of lambda:Invoke, named as one); S3, DynamoDB and the records are moto server's."""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any

import boto3
import pytest

from hdfs_events import envelope
from hdfs_events.quarantine import INGEST_PREFIX
from hdfs_events_cli.cli import main
from hdfs_events_cli.commands.quarantine import REASON_CHARS, Selection, redrive, report, selected_records
from lambdas.ingest import handler
from tests.kit.index_builders import live, mkdir, mkfile
from tests.kit.ingest_aws import BUCKET
from tests.kit.ingest_builders import manifests, pack
from tests.kit.lambda_events import AGENT_SENDER_IDS, Context, event, record
from tests.kit.next_agent import next_agent_message
from tests.kit.replay import in_order_state


class InProcessLambda:
    """lambda:Invoke (RequestResponse) of the consumer, run in this process."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def invoke(self, *, FunctionName: str, InvocationType: str, Payload: bytes) -> dict:
        assert InvocationType == "RequestResponse"
        request = json.loads(Payload)
        self.requests.append(request)
        response = handler.handler(request, Context())
        return {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(response).encode())}


PROD = [mkdir(1, "/data"), mkfile(2, "/data/f")]


@pytest.fixture
def quarantined(ddb, monkeypatch) -> dict[str, str]:
    """Three records by what they are: prod's and dev's envelope-v2 messages (their ranges'
    manifests not sent yet), and a prod message sent by dev's principal."""
    monkeypatch.setenv("LAKE_BUCKET", BUCKET)
    dev = [dataclasses.replace(mkdir(1, "/data"), cluster="dev")]
    (foreign,) = pack([mkfile(3, "/data/g")])
    handler.handler(event(next_agent_message(PROD, group_id="prod:data", major=2),
                          next_agent_message(dev, group_id="dev:data", major=2)), Context())
    handler.handler({"Records": [record(foreign, sender_id=AGENT_SENDER_IDS["dev"])]},
                    Context())
    found = {}
    for key in _keys(INGEST_PREFIX):
        doc = json.loads(boto3.client("s3").get_object(Bucket=BUCKET, Key=key)["Body"].read())
        cluster = doc["attributes"]["MessageGroupId"].split(":")[0]
        found["foreign" if "may not send" in doc["reason"] else cluster] = key
    assert sorted(found) == ["dev", "foreign", "prod"]
    return found


def _keys(prefix: str) -> list[str]:
    pages = boto3.client("s3").get_paginator("list_objects_v2").paginate(
        Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def test_dry_run_prints_what_the_filters_select_and_invokes_nothing(quarantined,
                                                                    capsys) -> None:
    assert main(["quarantine", "redrive", "--dry-run", "--cluster", "prod",
                 "--reason-contains", "envelope version 2"]) == 0
    out = capsys.readouterr()
    reason = json.loads(boto3.client("s3").get_object(
        Bucket=BUCKET, Key=quarantined["prod"])["Body"].read())["reason"]
    assert reason.startswith("unsupported envelope version 2")
    assert out.out.splitlines() == [
        f"would redrive {quarantined['prod']} cluster=prod reason={reason[:REASON_CHARS]}"]
    assert "1 quarantined message(s) selected" in out.err
    assert len(_keys(INGEST_PREFIX)) == 3
    assert main(["quarantine", "redrive", "--dry-run", "--since", "2999-01-01"]) == 0
    assert capsys.readouterr().out == ""


def test_redrive_after_the_upgrade_takes_each_message_once_and_refuses_the_foreign(
        quarantined, aws, ddb, monkeypatch) -> None:
    monkeypatch.setattr(envelope, "SUPPORTED_VERSIONS", frozenset({1, 2}))  # the upgrade
    s3, lam = boto3.client("s3"), InProcessLambda()

    chosen = [k for k, _ in selected_records(s3, BUCKET, Selection())]
    results = redrive(lam, "hdfs-events-ingest", chosen, batch=2)

    assert report(results) == 1  # the foreign record is still refused
    assert [len(r["redrive"]["keys"]) for r in lam.requests] == [2, 1]
    assert {r.key: (r.outcome, r.index) for r in results} == {
        quarantined["prod"]: ("ingested", "pending"), quarantined["dev"]: ("ingested", "pending"),
        quarantined["foreign"]: ("quarantined", None)}
    assert _keys(INGEST_PREFIX) == [quarantined["foreign"]]
    # prod's range closes after the redrive: the index applies it in order.
    handler.handler(event(*manifests(pack(PROD))), Context())
    aws.apply_requests(handler.handler)
    assert live(ddb) == in_order_state(PROD, "/data")
    lake = {k: s3.get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in _keys("raw/")}
    assert len(lake) == 2  # one object per message, each event once

    # Run again: only the foreign record is selected and refused again; nothing else changes.
    again = redrive(lam, "hdfs-events-ingest",
                    [k for k, _ in selected_records(s3, BUCKET, Selection())])
    assert [(r.key, r.outcome) for r in again] == [(quarantined["foreign"], "quarantined")]
    assert {k: s3.get_object(Bucket=BUCKET, Key=k)["Body"].read()
            for k in _keys("raw/")} == lake
    aws.apply_requests(handler.handler)
    assert live(ddb) == in_order_state(PROD, "/data")
