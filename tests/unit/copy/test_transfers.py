"""The transfers table's conditional writes keep one outcome per request (moto in-process)."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from hdfs_events import names
from hdfs_events.copy_request import make_request
from onprem_agent.copy_worker.failures import Rejected
from onprem_agent.copy_worker.transfers import AlreadyFinished, StaleAttempt, TransfersTable

REQUEST = make_request(request_id="r1", source="s3://lake/exports/a/",
                       destination="/data/imports/a", mode="update")


@pytest.fixture
def table() -> Iterator[TransfersTable]:
    with mock_aws():
        ddb = boto3.client("dynamodb")
        ddb.create_table(TableName="transfers", BillingMode="PAY_PER_REQUEST",
                         KeySchema=[{"AttributeName": names.TRANSFERS_PK, "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": names.TRANSFERS_PK,
                                                "AttributeType": "S"}])
        yield TransfersTable(ddb, "transfers", cluster="prod-nn1", retention_days=7,
                             clock=lambda: 1_800_000_000)


def test_lifecycle_records_each_state_change(table: TransfersTable) -> None:
    assert table.begin(REQUEST, worker="w1", message_id="m1") == 1
    table.failed("r1", 1, reason="distcp: exited with status 1", final=False, retry_in_s=30,
                 duration_ms=5)
    assert table.begin(REQUEST, worker="w2", message_id="m1") == 2
    table.verified("r1", 2, bytes_copied=30, files=3, duration_ms=1200)
    item = table.get("r1")
    assert item["state"] == "verified"
    assert item["attempts"] == 2 and item["bytes"] == 30 and item["files"] == 3
    assert item[names.TTL_ATTRIBUTE] == 1_800_000_000 + 7 * 86_400
    assert [h["state"] for h in item["history"]] == ["running", "failed", "running", "verified"]
    assert item["history"][1]["reason"] == "distcp: exited with status 1"
    assert "reason" not in item  # cleared when the next attempt began


def test_verified_request_is_not_begun_again(table: TransfersTable) -> None:
    table.begin(REQUEST, worker="w1", message_id="m1")
    table.verified("r1", 1, bytes_copied=1, files=1, duration_ms=1)
    with pytest.raises(AlreadyFinished) as caught:
        table.begin(REQUEST, worker="w2", message_id="m2")
    assert caught.value.state == "verified"
    assert table.get("r1")["attempts"] == 1


def test_request_id_reused_for_another_request_is_refused(table: TransfersTable) -> None:
    table.begin(REQUEST, worker="w1", message_id="m1")
    other = make_request(request_id="r1", source="s3://lake/exports/a/",
                         destination="/data/imports/b", mode="update")
    with pytest.raises(Rejected, match="already used"):
        table.begin(other, worker="w2", message_id="m2")
    assert not table.rejected("r1", reason="x", request=other, body_preview=None, attempt=None)
    assert table.get("r1")["destination"] == "/data/imports/a"


def test_result_of_a_superseded_attempt_is_dropped(table: TransfersTable) -> None:
    table.begin(REQUEST, worker="w1", message_id="m1")
    table.begin(REQUEST, worker="w2", message_id="m1")  # the message went to another worker
    with pytest.raises(StaleAttempt):
        table.verified("r1", 1, bytes_copied=1, files=1, duration_ms=1)
    table.verified("r1", 2, bytes_copied=1, files=1, duration_ms=1)
    assert table.get("r1")["state"] == "verified"


def test_rejection_is_recorded_once_and_never_over_a_finished_request(
        table: TransfersTable) -> None:
    assert table.rejected("message:m9", reason="invalid request: v: unsupported",
                          request=None, body_preview="'{}'", attempt=None)
    assert not table.rejected("message:m9", reason="again", request=None, body_preview="'{}'",
                              attempt=None)
    assert table.get("message:m9")["reason"] == "invalid request: v: unsupported"
    table.begin(REQUEST, worker="w1", message_id="m1")
    table.verified("r1", 1, bytes_copied=1, files=1, duration_ms=1)
    assert not table.rejected("r1", reason="x", request=REQUEST, body_preview=None, attempt=1)
    assert table.get("r1")["state"] == "verified"


def test_running_attempt_can_be_rejected_by_its_own_worker(table: TransfersTable) -> None:
    attempt = table.begin(REQUEST, worker="w1", message_id="m1")
    assert table.rejected("r1", reason="manifest: lies", request=REQUEST, body_preview=None,
                          attempt=attempt)
    item = table.get("r1")
    assert item["state"] == "rejected" and item["final"] is True
    with pytest.raises(AlreadyFinished):
        table.begin(REQUEST, worker="w1", message_id="m2")


def test_items_are_keyed_by_cluster_so_two_clusters_reuse_a_request_id_apart(
        table: TransfersTable) -> None:
    ddb = boto3.client("dynamodb")  # the fixture's moto is still in place
    other = TransfersTable(ddb, "transfers", cluster="prod-nn2", retention_days=7)
    assert table.begin(REQUEST, worker="w1", message_id="m1") == 1
    assert other.begin(REQUEST, worker="w9", message_id="m9") == 1  # not "attempt 2"
    keys = {i[names.TRANSFERS_PK]["S"]: i["cluster"]["S"]
            for i in ddb.scan(TableName="transfers")["Items"]}
    assert keys == {"prod-nn1#r1": "prod-nn1", "prod-nn2#r1": "prod-nn2"}


def test_copy_status_prints_what_the_worker_recorded(table: TransfersTable, capsys) -> None:
    """The worker writes the item and `hdfs-events copy status` reads it: both by
    hdfs_events.transfer_item's names, so a renamed attribute shows here as a missing line."""
    from hdfs_events_cli import cli

    table.begin(REQUEST, worker="w1", message_id="m1")
    table.failed("r1", 1, reason="distcp: exited with status 1", final=False, retry_in_s=30,
                 duration_ms=5)
    table.begin(REQUEST, worker="w2", message_id="m2")
    table.verified("r1", 2, bytes_copied=30, files=3, duration_ms=1200)
    capsys.readouterr()
    assert cli.main(["copy", "status", "r1", "--cluster", "prod-nn1",
                     "--transfers-table", "transfers"]) == 0
    lines = capsys.readouterr().out.splitlines()
    fields = {line.split()[0]: line.split(None, 1)[1] for line in lines if line[:1] != " "}
    assert fields["state"] == "verified" and fields["attempts"] == "2"
    assert (fields["files"], fields["bytes"], fields["duration_ms"]) == ("3", "30", "1200")
    assert fields["worker"] == "w2" and fields["destination"] == "/data/imports/a"
    assert fields["retry_at"] and fields["finished_at"] and "reason" not in fields
    history = [line.split()[1:] for line in lines if line.startswith("  ")]
    assert [entry[0] for entry in history] == ["running", "failed", "running", "verified"]
    assert history[1][1:4] == ["attempt", "1:", "distcp:"]
