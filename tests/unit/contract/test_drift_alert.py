"""The drift alert message: what the agent's verify writes is what `hdfs-events drift receive`
reads; a body that is not one is refused naming the field; the command prints and deletes."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from hdfs_events.drift_alert import (
    DriftAlertError,
    DriftSummary,
    VerifyRun,
    parse_alert,
    path_drift,
)
from hdfs_events_cli.commands.drift import receive

RUN = VerifyRun("prod", "0123abcd", "2026-11-26T03:00:00Z")


def test_a_path_alert_reads_back_as_written() -> None:
    alert = path_drift(RUN, "/data", kind="size", path="/data/a.csv", hdfs=50, index=40,
                       index_txid=120)
    assert parse_alert(alert.body()) == alert
    assert json.loads(alert.body())["kind"] == "drift"
    assert alert.line() == ("2026-11-26T03:00:00Z prod /data/a.csv: size differs: hdfs=50 "
                            "index=40 (index at txid 120)")
    missing = path_drift(RUN, "/data", kind="missing", path="/data/ü b", index_txid=7)
    assert parse_alert(missing.body()) == missing
    assert missing.line().endswith("/data/ü b: in HDFS, missing from the index (index at txid 7)")


def test_a_summary_reads_back_as_written() -> None:
    summary = DriftSummary("prod", "0123abcd", "2026-11-26T03:00:00Z", sent=1000, more=4)
    assert parse_alert(summary.body()) == summary
    assert "4 more drifting paths" in summary.line()


@pytest.mark.parametrize(("change", "message"), [
    ({"version": 2}, "version: must be 1, got 2"),
    ({"kind": "drifted"}, "kind: must be 'drift' or 'drift-summary'"),
    ({"path": ""}, "path: must be a non-empty string"),
    ({"drift": "owner"}, "drift: 'owner' is not one of"),
    ({"index_txid": "12"}, "index_txid: must be an integer or null"),
    ({"hdfs": [1]}, "hdfs: must be a string, an integer or null"),
])
def test_a_body_that_is_not_an_alert_is_refused_naming_the_field(change: dict[str, Any],
                                                                  message: str) -> None:
    body = json.loads(path_drift(RUN, "/d", kind="size", path="/d/a", hdfs=1, index=2).body())
    with pytest.raises(DriftAlertError, match=message):
        parse_alert(json.dumps(body | change))
    with pytest.raises(DriftAlertError, match="body: not JSON"):
        parse_alert("{")


@pytest.fixture
def queue() -> Iterator[tuple[Any, str]]:
    with mock_aws():
        sqs = boto3.client("sqs")
        yield sqs, sqs.create_queue(QueueName="hdfs-events-test-drift-alerts")["QueueUrl"]


def waiting(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
        "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return sum(int(v) for v in attributes.values())


def test_receive_prints_each_alert_and_deletes_it(queue: tuple[Any, str]) -> None:
    sqs, url = queue
    alerts = [path_drift(RUN, "/d", kind="extra", path=f"/d/f{n:02}", index_txid=n)
              for n in range(13)]
    for alert in alerts:
        sqs.send_message(QueueUrl=url, MessageBody=alert.body())
    out = io.StringIO()
    assert receive(sqs, url, limit=100, wait_s=0, out=out) == 0
    assert sorted(out.getvalue().splitlines()) == sorted(a.line() for a in alerts)
    assert waiting(sqs, url) == 0


def test_receive_keep_and_json_print_bodies_and_delete_nothing(queue: tuple[Any, str]) -> None:
    sqs, url = queue
    alert = path_drift(RUN, "/d", kind="missing", path="/d/new")
    sqs.send_message(QueueUrl=url, MessageBody=alert.body())
    out = io.StringIO()
    assert receive(sqs, url, limit=5, wait_s=0, as_json=True, keep=True, out=out) == 0
    assert [parse_alert(line) for line in out.getvalue().splitlines()] == [alert]
    assert waiting(sqs, url) == 1


def test_receive_stops_at_its_limit(queue: tuple[Any, str]) -> None:
    sqs, url = queue
    for n in range(4):
        sqs.send_message(QueueUrl=url, MessageBody=path_drift(
            RUN, "/d", kind="missing", path=f"/d/{n}").body())
    out = io.StringIO()
    assert receive(sqs, url, limit=3, wait_s=0, out=out) == 0
    assert len(out.getvalue().splitlines()) == 3 and waiting(sqs, url) == 1


def test_a_foreign_message_is_reported_and_left_on_the_queue(
        queue: tuple[Any, str], capsys: pytest.CaptureFixture[str]) -> None:
    sqs, url = queue
    sqs.send_message(QueueUrl=url, MessageBody='{"hello": 1}')
    assert receive(sqs, url, limit=5, wait_s=0, out=io.StringIO()) == 1
    assert "is not a drift alert (left on the queue): version: must be 1" in capsys.readouterr().err
    assert waiting(sqs, url) == 1
