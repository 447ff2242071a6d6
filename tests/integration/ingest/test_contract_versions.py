"""An agent one version ahead, through the real consumer handler on moto server: a newer minor
is indexed with its new fields kept in the raw lake as sent; a newer major waits in quarantine
with a reason naming its version (docs/contract.md, "Versions")."""

from __future__ import annotations

import json

import boto3

from hdfs_events.envelope import unknown_envelope_json
from lambdas.ingest import handler
from lambdas.ingest.lake import ENVELOPE_METADATA
from tests.kit.index_builders import live, mkdir, mkfile
from tests.kit.ingest_aws import BUCKET, lake_lines
from tests.kit.ingest_builders import manifests, pack
from tests.kit.lambda_events import Context, event
from tests.kit.next_agent import NEW_ENVELOPE_FIELDS, NEW_EVENT_FIELD, next_agent_message
from tests.kit.replay import in_order_state


def _objects(s3, prefix: str) -> list[str]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def test_a_next_minor_message_is_indexed_and_its_new_fields_kept_in_the_lake(aws, ddb) -> None:
    s3 = boto3.client("s3")
    events = [mkdir(1, "/data"), mkdir(2, "/data/a"), mkfile(3, "/data/a/f")]
    sent = next_agent_message(events, group_id="prod:data")

    assert handler.handler(event(sent, *manifests([sent])), Context()) == {
        "batchItemFailures": []}
    aws.apply_requests(handler.handler)

    assert _objects(s3, "quarantine/") == []
    assert live(ddb) == in_order_state(events, "/data")
    (key,) = _objects(s3, "raw/")
    obj = s3.get_object(Bucket=BUCKET, Key=key)
    lines = lake_lines(obj["Body"].read())
    # Known fields canonical (what a compaction of this version reads), the new one as sent.
    assert [json.loads(line) for line in lines] == [
        {**e.to_dict(), NEW_EVENT_FIELD: f"HOT-{e.txid}"} for e in events]
    assert [line.startswith(e.to_json()[:-1] + ",") for line, e in zip(lines, events, strict=True)] == [
        True] * 3
    assert json.loads(obj["Metadata"][ENVELOPE_METADATA]) == NEW_ENVELOPE_FIELDS
    assert obj["Metadata"][ENVELOPE_METADATA] == unknown_envelope_json(NEW_ENVELOPE_FIELDS)


def test_a_next_major_message_is_quarantined_naming_its_version(aws, ddb) -> None:
    s3 = boto3.client("s3")
    events = [mkdir(1, "/data"), mkfile(2, "/data/f")]
    sent = next_agent_message(events, group_id="prod:data", major=2)

    # The manifest names the message by its deduplication id, whatever its version.
    assert handler.handler(event(sent, *manifests(pack(events))), Context()) == {
        "batchItemFailures": []}
    aws.apply_requests(handler.handler)

    assert _objects(s3, "raw/") == []
    (key,) = _objects(s3, "quarantine/ingest/")
    reason = json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())["reason"]
    assert reason.startswith("unsupported envelope version 2; this reader knows major(s) [1]")
    assert "refused until the consumer is upgraded" in reason
    assert live(ddb) == {}
