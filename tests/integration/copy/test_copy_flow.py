"""A request submitted with `hdfs-events copy submit` is copied by Hadoop's DistCp from moto's S3
into a real HDFS, verified, tracked, notified."""

from __future__ import annotations

import json

import boto3
import pytest

from hdfs_events import names
from hdfs_events_cli.cli import main as cloud_cli

from .conftest import BUCKET, CLUSTER, TABLE, CopyWorld

FILES = {"part-00000.parquet": b"a" * 1000, "part-00001.parquet": b"b" * 2345,
         "sub/part-00002.parquet": b"c" * 17}


def submit(world: CopyWorld, capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    code = cloud_cli(["copy", "submit", "--queue-url", world.queue_url,
                      "--cluster", CLUSTER, "--transfers-table", TABLE, *args])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def test_submitted_request_is_copied_verified_recorded_and_notified(
        world: CopyWorld, capsys: pytest.CaptureFixture[str]) -> None:
    world.put_dataset("exports/sales/dt=2026-11-20/", FILES)
    sent = submit(world, capsys, "--request-id", "sales-1",
                  "--source", f"s3://{BUCKET}/exports/sales/dt=2026-11-20/",
                  "--destination", "/data/imports/sales/dt=2026-11-20", "--mode", "overwrite")
    assert world.item("sales-1")["state"] == "requested"

    assert world.run_until_idle() == 1

    assert world.landed("/data/imports/sales/dt=2026-11-20") == {**FILES, "_SUCCESS": b""}
    item = world.item("sales-1")
    assert item["state"] == "verified"
    assert item["attempts"] == 1
    assert item["files"] == len(FILES) + 1  # with _SUCCESS
    assert item["bytes"] == sum(len(d) for d in FILES.values())
    assert [h["state"] for h in item["history"]] == ["requested", "running", "verified"]
    assert world.queue_depth(world.queue_url) == 0
    [outcome] = world.outcomes()
    assert outcome["request_id"] == "sales-1" == sent["request_id"]
    assert outcome["state"] == "verified"
    metrics = boto3.client("cloudwatch").list_metrics(
        Namespace=names.METRICS_NAMESPACE, MetricName=names.METRIC_COPY_OUTCOME)["Metrics"]
    assert {"Name": "Outcome", "Value": "verified"} in metrics[0]["Dimensions"]
    [argv] = world.invocations()
    assert argv == ["distcp", "-overwrite", f"s3a://{BUCKET}/exports/sales/dt=2026-11-20/",
                    "/data/imports/sales/dt=2026-11-20"]

    assert cloud_cli(["copy", "status", "sales-1", "--cluster", CLUSTER,
                      "--transfers-table", TABLE]) == 0
    status = capsys.readouterr().out
    assert "verified" in status and "sales-1" in status


def test_redelivered_verified_request_is_deleted_without_copying_again(
        world: CopyWorld, capsys: pytest.CaptureFixture[str]) -> None:
    world.put_dataset("exports/daily/", FILES)
    request = submit(world, capsys, "--request-id", "daily-1", "--source",
                     f"s3://{BUCKET}/exports/daily/", "--destination", "/data/imports/daily")
    world.run_until_idle()
    assert world.item("daily-1")["state"] == "verified"
    body = json.dumps({"v": 1, "request_id": request["request_id"],
                       "source": f"s3://{BUCKET}/exports/daily/",
                       "destination": "/data/imports/daily", "mode": "update"})
    world.send(body)  # SQS delivers at least once: the same request again

    world.run_until_idle()

    assert len(world.invocations()) == 1
    assert world.queue_depth(world.queue_url) == 0
    assert world.item("daily-1")["attempts"] == 1


def test_copy_listing_copies_only_listed_objects(world: CopyWorld,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    world.put_dataset("exports/m/", FILES, success=False)
    world.put("exports/m/_temporary/attempt_1/junk", b"half written")
    listing = world.tmp / "listing.json"
    listing.write_text(json.dumps([{"key": f"exports/m/{n}", "size": len(d)}
                                   for n, d in FILES.items()]))
    submit(world, capsys, "--request-id", "m-1", "--source", f"s3://{BUCKET}/exports/m/",
           "--destination", "/data/imports/m", "--listing", str(listing))

    world.run_until_idle()

    assert world.item("m-1")["state"] == "verified"
    assert world.landed("/data/imports/m") == FILES  # not _temporary/
    [argv] = world.invocations()
    assert "-filters" in argv


def test_skip_existing_keeps_files_already_there(world: CopyWorld,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    world.put_dataset("exports/s/", FILES)
    world.hdfs.run([["write", "/data/imports/s/part-00000.parquet", "local version"]])
    submit(world, capsys, "--request-id", "s-1", "--source", f"s3://{BUCKET}/exports/s/",
           "--destination", "/data/imports/s", "--mode", "skip-existing")

    world.run_until_idle()

    item = world.item("s-1")
    assert item["state"] == "verified"
    landed = world.landed("/data/imports/s")
    assert landed["part-00000.parquet"] == b"local version"
    assert landed["part-00001.parquet"] == FILES["part-00001.parquet"]
    assert item["files"] == len(FILES)  # 3 of the 4 (with _SUCCESS): one was there


def test_submit_refuses_an_invalid_request_before_sending(
        world: CopyWorld, capsys: pytest.CaptureFixture[str]) -> None:
    code = cloud_cli(["copy", "submit", "--queue-url", world.queue_url, "--source",
                      f"s3://{BUCKET}/exports/x/", "--destination", "/data/imports/../etc"])
    assert code == 2
    assert "destination" in capsys.readouterr().err
    assert world.queue_depth(world.queue_url) == 0


def test_listing_from_source_and_resubmission_of_a_finished_request(
        world: CopyWorld, capsys: pytest.CaptureFixture[str]) -> None:
    world.put_dataset("exports/l/", FILES, success=False)
    args = ["--request-id", "l-1", "--source", f"s3://{BUCKET}/exports/l/",
            "--destination", "/data/imports/l", "--listing-from-source"]
    submit(world, capsys, *args)
    world.run_until_idle()
    assert world.item("l-1")["state"] == "verified"

    code = cloud_cli(["copy", "submit", "--queue-url", world.queue_url,
                      "--cluster", CLUSTER, "--transfers-table", TABLE, *args])

    assert code == 0
    assert "already verified; not sent" in capsys.readouterr().err
    assert world.queue_depth(world.queue_url) == 0
    assert cloud_cli(["copy", "status", "l-1", "--cluster", CLUSTER, "--transfers-table", TABLE,
                      "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["state"] == "verified" and status["files"] == len(FILES)
    assert len(json.loads(status["request"])["manifest"]) == len(FILES)


def test_submit_from_a_request_file_to_a_fifo_queue_and_status_of_an_unknown_id(
        world: CopyWorld, capsys: pytest.CaptureFixture[str]) -> None:
    fifo_url = world.sqs.create_queue(QueueName="copy-requests.fifo",
                                      Attributes={"FifoQueue": "true"})["QueueUrl"]
    path = world.tmp / "request.json"
    path.write_text(json.dumps({"v": 1, "request_id": "f-1", "mode": "update",
                                "source": f"s3://{BUCKET}/exports/f/",
                                "destination": "/data/imports/f"}))
    code = cloud_cli(["copy", "submit", "--queue-url", fifo_url, "--request", str(path)])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["request_id"] == "f-1"
    [message] = world.sqs.receive_message(QueueUrl=fifo_url,
                                          AttributeNames=["All"])["Messages"]
    assert message["Attributes"]["MessageDeduplicationId"] == "f-1"
    assert message["Attributes"]["MessageGroupId"].startswith("copy:/data/imports/f")
    assert cloud_cli(["copy", "status", "nope", "--cluster", CLUSTER,
                      "--transfers-table", TABLE]) == 1
    assert "no request 'nope'" in capsys.readouterr().err


def test_worker_command_exits_when_idle_and_reports_config_errors(
        world: CopyWorld, capsys: pytest.CaptureFixture[str]) -> None:
    from onprem_agent.cli import main as agent_cli

    world.put_dataset("exports/c/", FILES)
    submit(world, capsys, "--request-id", "c-1", "--source", f"s3://{BUCKET}/exports/c/",
           "--destination", "/data/imports/c")
    assert agent_cli(["copy-worker", "--config", str(world.config()), "--exit-when-idle"]) == 0
    assert world.item("c-1")["state"] == "verified"

    bad = world.config(heartbeat_s=10, visibility_timeout_s=20)
    assert agent_cli(["copy-worker", "--config", str(bad)]) == 2
    assert "[copy] heartbeat_s" in capsys.readouterr().err
