"""The agent's first start from the fsimage (onprem_agent/live/image_start.py) against moto's S3
and Glue in process: a restart finds the index written or the job run under way and neither
fetches nor starts a second run; purged edits fall back to the listing; a run that never writes
the index stops the wait, naming the setting. The whole start on a real NameNode:
tests/integration/agent/test_first_start_fsimage.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from hdfs_events.lake_layout import fsimage_indexed_key, fsimage_key
from onprem_agent.live.image_start import ImageStart, ImageStartError, ImageStartPlan

CLUSTER, BUCKET, JOB, T = "prod", "lake", "inventory", 1513


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        s3, glue = boto3.client("s3", region_name="us-east-1"), boto3.client(
            "glue", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        glue.create_job(Name=JOB, Role="arn:aws:iam::123456789012:role/glue",
                        Command={"Name": "glueetl", "ScriptLocation": "s3://a/x.py"})
        yield s3, glue


class Clock:
    def __init__(self) -> None:
        self.now, self.sleeps = 0.0, 0

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.sleeps += 1


def start(s3: Any, glue: Any, *, kept: bool = True, on_sleep: Any = None,
          wait_s: float = 600) -> tuple[ImageStart, list[int], Clock]:
    fetched: list[int] = []
    clock = Clock()

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if on_sleep is not None:
            on_sleep()

    def fetch() -> int:
        fetched.append(T)
        return T

    plan = ImageStartPlan(CLUSTER, BUCKET, JOB, wait_s=wait_s, poll_s=5)
    return (ImageStart(plan, s3=s3, glue=glue, fetch=fetch, edits_kept_after=lambda _: kept,
                       sleep=sleep, monotonic=lambda: clock.now), fetched, clock)


def mark_indexed(s3: Any, txid: int = T) -> None:
    s3.put_object(Bucket=BUCKET, Key=fsimage_indexed_key(CLUSTER, txid), Body=b"{}")


def image_uri() -> str:
    return f"s3://{BUCKET}/{fsimage_key(CLUSTER, T)}"


def test_a_written_index_is_taken_up_without_fetching_or_running_the_job(aws):
    s3, glue = aws
    mark_indexed(s3, T - 10)
    mark_indexed(s3)
    image_start, fetched, _ = start(s3, glue)
    assert image_start.run() == T
    assert fetched == [] and glue.get_job_runs(JobName=JOB)["JobRuns"] == []


def test_the_job_runs_once_for_the_image_and_the_start_waits_for_its_index(aws):
    s3, glue = aws
    image_start, fetched, clock = start(s3, glue, on_sleep=lambda: mark_indexed(s3))
    assert image_start.run() == T
    runs = glue.get_job_runs(JobName=JOB)["JobRuns"]
    assert [r["Arguments"] for r in runs] == [{"--cluster": CLUSTER, "--image": image_uri()}]
    assert fetched == [T] and clock.sleeps == 1


def test_a_restart_while_the_run_goes_on_does_not_start_another(aws):
    s3, glue = aws
    glue.start_job_run(JobName=JOB, Arguments={"--cluster": CLUSTER, "--image": image_uri()})
    image_start, _, _ = start(s3, glue, on_sleep=lambda: mark_indexed(s3))
    assert image_start.run() == T
    assert len(glue.get_job_runs(JobName=JOB)["JobRuns"]) == 1


def test_purged_edits_after_the_image_fall_back_to_the_listing(aws):
    s3, glue = aws
    image_start, fetched, _ = start(s3, glue, kept=False)
    assert image_start.run() is None
    assert fetched == [T] and glue.get_job_runs(JobName=JOB)["JobRuns"] == []


def test_an_index_never_written_stops_the_wait_naming_the_setting(aws):
    s3, glue = aws
    image_start, _, clock = start(s3, glue, wait_s=30)
    with pytest.raises(ImageStartError, match=r"index_wait_s"):
        image_start.run()
    assert clock.now > 30
