"""The agent's first start and gap repair from the fsimage (onprem_agent/live/image_start.py)
against moto's S3 and Glue in process: a restart finds the index written or the job run under
way and neither fetches nor starts a second run; purged edits fall back to the listing; a run
that never writes the index, or fails, stops the wait, naming the setting; a stop ends it. The
whole start on a real NameNode: tests/integration/agent/test_first_start_fsimage.py; the
repair: tests/integration/hdfs/test_namespace_listing.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from hdfs_events.lake_layout import fsimage_indexed_key, fsimage_key
from onprem_agent.image_fetch import FetchedImage
from onprem_agent.live.image_start import (
    ImageStart,
    ImageStartError,
    ImageStartPlan,
    ImageStartStopped,
)

CLUSTER, BUCKET, JOB, T = "prod", "lake", "inventory", 1513
E = 1200  # a gap's first purged txid: the image of T holds it


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
          wait_s: float = 600, stop: threading.Event | None = None,
          image_txid: int = T) -> tuple[ImageStart, list[int], Clock]:
    fetched: list[int] = []
    clock = Clock()

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if on_sleep is not None:
            on_sleep()

    def fetch() -> FetchedImage:
        fetched.append(image_txid)
        return FetchedImage(image_txid, 10, 0, BUCKET, fsimage_key(CLUSTER, image_txid),
                            uploaded=True, seconds=1.0)

    plan = ImageStartPlan(CLUSTER, BUCKET, JOB, wait_s=wait_s, poll_s=5)
    return (ImageStart(plan, s3=s3, glue=glue, fetch=fetch, edits_kept_after=lambda _: kept,
                       stop=stop, sleep=sleep, monotonic=lambda: clock.now), fetched, clock)


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


# --- gap repair (gap_policy = "fsimage") ------------------------------------------------------


class FailingRunGlue:
    """A double of the Glue client whose job runs end FAILED (moto's runs always succeed)."""

    def __init__(self, glue: Any) -> None:
        self._glue = glue

    def __getattr__(self, name: str) -> Any:
        return getattr(self._glue, name)

    def get_job_run(self, **kw: Any) -> dict[str, Any]:
        run = self._glue.get_job_run(**kw)["JobRun"]
        return {"JobRun": run | {"JobRunState": "FAILED",
                                 "ErrorMessage": "the index is applied only through 1100"}}


def runs_of(glue: Any) -> list[dict[str, str]]:
    return [r["Arguments"] for r in glue.get_job_runs(JobName=JOB)["JobRuns"]]


def test_a_repair_written_already_is_taken_up_without_fetching_or_running_the_job(aws, caplog):
    s3, glue = aws
    mark_indexed(s3)  # the repair's job finished; the agent crashed before saving T
    image_start, fetched, _ = start(s3, glue)
    with caplog.at_level("INFO"):
        assert image_start.repair(E) == T
    assert fetched == [] and runs_of(glue) == []
    assert "gap repair from the fsimage: the index is written from the image of txid 1513 " \
           "already" in caplog.text


def test_a_first_starts_index_says_nothing_of_a_later_gap(aws):
    s3, glue = aws
    mark_indexed(s3, E - 300)  # the first start's image, older than the gap
    image_start, fetched, _ = start(s3, glue, on_sleep=lambda: mark_indexed(s3))
    assert image_start.repair(E) == T
    assert fetched == [T] and len(runs_of(glue)) == 1


def test_the_repair_runs_the_job_after_the_last_txid_shipped_and_waits_for_its_index(
        aws, caplog):
    s3, glue = aws
    image_start, fetched, clock = start(s3, glue, on_sleep=lambda: mark_indexed(s3))
    with caplog.at_level("INFO"):
        assert image_start.repair(E) == T
    assert runs_of(glue) == [{"--cluster": CLUSTER, "--image": image_uri(),
                              "--repair_after": str(E - 1)}]
    assert fetched == [T] and clock.sleeps == 1
    assert "gap repair from the fsimage: index written through txid 1513" in caplog.text


def test_a_restart_while_the_repair_runs_does_not_start_another(aws):
    s3, glue = aws
    glue.start_job_run(JobName=JOB, Arguments={"--cluster": CLUSTER, "--image": image_uri(),
                                               "--repair_after": str(E - 1)})
    image_start, _, _ = start(s3, glue, on_sleep=lambda: mark_indexed(s3))
    assert image_start.repair(E) == T
    assert len(runs_of(glue)) == 1


class RunningGlue:
    """A double of the Glue client whose runs stay RUNNING (moto's succeed at once)."""

    def __init__(self, glue: Any) -> None:
        self._glue = glue

    def __getattr__(self, name: str) -> Any:
        return getattr(self._glue, name)

    def get_paginator(self, name: str) -> Any:
        glue = self

        class Pages:
            def paginate(self, **kw: Any) -> list[dict[str, Any]]:
                return [glue.get_job_runs(**kw)]
        return Pages()

    def get_job_runs(self, **kw: Any) -> dict[str, Any]:
        runs = self._glue.get_job_runs(**kw)["JobRuns"]
        return {"JobRuns": [r | {"JobRunState": "RUNNING"} for r in runs]}


def test_a_restart_waits_for_the_gaps_live_run_even_on_an_older_image(aws):
    s3, glue = aws
    # The NameNode checkpointed again while the agent was down a second time: its latest
    # image is newer than the one the live run reads. A second run on it would wait for the
    # same position and write beside the first.
    older = T - 10
    glue.start_job_run(JobName=JOB, Arguments={
        "--cluster": CLUSTER, "--image": f"s3://{BUCKET}/{fsimage_key(CLUSTER, older)}",
        "--repair_after": str(E - 1)})
    image_start, fetched, _ = start(s3, RunningGlue(glue),
                                    on_sleep=lambda: mark_indexed(s3, older))
    assert image_start.repair(E) == older
    assert fetched == [] and len(runs_of(glue)) == 1


@pytest.mark.parametrize(("kept", "image_txid", "why"), [
    (False, T, "the NameNode has purged the edits after its image's txid 1513"),
    (True, E - 1, "the NameNode's latest image (txid 1199) is older than the gap at txid 1200"),
])
def test_an_image_that_cannot_repair_the_gap_falls_back_to_the_listing(
        aws, caplog, kept, image_txid, why):
    s3, glue = aws
    image_start, fetched, _ = start(s3, glue, kept=kept, image_txid=image_txid)
    with caplog.at_level("WARNING"):
        assert image_start.repair(E) is None
    assert fetched == [image_txid] and runs_of(glue) == []
    (line,) = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert line.startswith(f"gap repair from the fsimage: {why}") and "listing" in line


def test_a_failed_repair_run_stops_the_agent_with_the_runs_message(aws):
    s3, glue = aws
    image_start, _, _ = start(s3, FailingRunGlue(glue))
    with pytest.raises(ImageStartError, match=r"^gap repair from the fsimage: .* ended FAILED: "
                                              r"the index is applied only through 1100; .*"
                                              r'gap_policy = "snapshot"'):
        image_start.repair(E)


def test_a_stop_ends_the_wait_for_the_repair(aws):
    s3, glue = aws
    stop = threading.Event()
    image_start, _, clock = start(s3, glue, stop=stop, on_sleep=stop.set)
    with pytest.raises(ImageStartStopped):
        image_start.repair(E)
    assert clock.sleeps == 1  # not the 600 s of index_wait_s


def test_without_a_sleep_given_the_wait_sleeps_on_the_stop_event(aws):
    s3, glue = aws
    stop = threading.Event()
    plan = ImageStartPlan(CLUSTER, BUCKET, JOB, wait_s=600, poll_s=60)
    image_start = ImageStart(plan, s3=s3, glue=glue, edits_kept_after=lambda _: True,
                             fetch=lambda: FetchedImage(T, 10, 0, BUCKET, "k", True, 1.0),
                             stop=stop)
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    with pytest.raises(ImageStartStopped):
        image_start.repair(E)
    assert time.monotonic() - started < 30  # at the stop, not at the end of a 60 s poll
