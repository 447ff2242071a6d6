"""The redrive's selection (pure) and the handler's redrive path (moto in-process): a message a
consumer limit quarantined is taken once the limit is raised (the fix), each event once."""

from __future__ import annotations

import dataclasses
import json

import pytest

from hdfs_events import validation
from hdfs_events.quarantine import (
    MAX_REDRIVE_KEYS,
    RedriveRequestError,
    ingest_key,
    redriven_key,
)
from hdfs_events_cli.commands.quarantine import Selection
from lambdas.ingest import handler
from tests.kit.index_builders import mkdir, mkfile
from tests.kit.ingest_aws import lake_events
from tests.kit.ingest_builders import manifests, pack
from tests.kit.lambda_events import Context, event

KEY = "quarantine/ingest/dt=2026-11-20/0a1b-2c3d.json"


def _record(group: str = "prod:data", reason: str = "unsupported envelope version 2") -> dict:
    return {"reason": reason, "body": "{}", "attributes": {"MessageGroupId": group}}


@pytest.mark.parametrize(("selection", "key", "record", "wanted"), [
    (Selection(), KEY, _record(), True),
    (Selection(cluster="prod"), KEY, _record(), True),
    (Selection(cluster="dev"), KEY, _record(), False),
    (Selection(cluster="prod"), KEY, _record(group="prodx:data"), False),
    (Selection(since="2026-11-20"), KEY, _record(), True),
    (Selection(since="2026-11-21"), KEY, _record(), False),
    (Selection(reason_contains="version 2"), KEY, _record(), True),
    (Selection(reason_contains="owner"), KEY, _record(), False),
    # Only the consumer's own records: not the redriven ones, not Glue's quarantine.
    (Selection(), redriven_key(KEY), _record(), False),
    (Selection(), "quarantine/glue/lines/x.json", _record(), False),
    (Selection(), KEY, ["not", "a", "record"], False),
])
def test_the_selection_filters_by_cluster_date_and_reason(selection, key, record,
                                                          wanted) -> None:
    assert selection.wants(key, record) is wanted


def test_record_keys_keep_the_layout_the_consumer_always_wrote() -> None:
    assert ingest_key("ab/c:d", 1_764_000_000_000) == "quarantine/ingest/dt=2025-11-24/ab_c_d.json"
    assert redriven_key(KEY) == "quarantine/redriven/dt=2026-11-20/0a1b-2c3d.json"


@pytest.mark.parametrize(("request_", "problem"), [
    ({"redrive": {}}, "field 'redrive.keys' must be a list of strings"),
    ({"redrive": {"keys": [KEY, 7]}}, "field 'redrive.keys' must be a list of strings"),
    ({"redrive": {"keys": []}}, f"must name 1 to {MAX_REDRIVE_KEYS} keys, got 0"),
    ({"redrive": {"keys": [KEY] * (MAX_REDRIVE_KEYS + 1)}}, "got 21"),
])
def test_a_malformed_request_is_refused_naming_the_field(aws, request_, problem) -> None:
    with pytest.raises(RedriveRequestError, match=problem):
        handler.handler(request_, Context())


def test_a_message_a_limit_quarantined_is_taken_once_the_limit_is_raised(
        aws, monkeypatch) -> None:
    fine = [mkdir(1, "/data"), mkfile(2, "/data/f")]
    events = [fine[0], dataclasses.replace(fine[1], owner="o" * 300)]
    # The manifest names messages by deduplication id: (cluster, first, last, count).
    handler.handler(event(*pack(events), *manifests(pack(fine))), Context())
    aws.apply_requests(handler.handler)  # the range is applied without it
    (key,) = aws.lake_keys("quarantine/ingest/")
    assert "field 'owner'" in json.loads(aws.get(key))["reason"]

    monkeypatch.setattr(validation, "MAX_NAME_CHARS", 512)  # the fix
    (result,) = handler.handler({"redrive": {"keys": [key]}}, Context())["redrive"]

    assert (result["outcome"], result["index"]) == ("ingested", "passed")
    assert aws.lake_keys("quarantine/ingest/") == []
    assert [(e["txid"], e["owner"]) for e in lake_events(aws)] == [(1, "etl"), (2, "o" * 300)]
    again = handler.handler({"redrive": {"keys": [key]}}, Context())["redrive"]
    assert [r["outcome"] for r in again] == ["missing"]
    assert len(lake_events(aws)) == 2
