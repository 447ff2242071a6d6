"""Long copies, crashed workers, failing and hanging distcp: each request still ends once."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading

import pytest

from .conftest import BUCKET, CopyWorld, wait_for

FILES = {"part-0": b"x" * 300, "part-1": b"y" * 400, "part-2": b"z" * 500}
SRC = f"s3://{BUCKET}/exports/long/"


def request(request_id: str, mode: str = "update") -> str:
    return json.dumps({"v": 1, "request_id": request_id, "source": SRC,
                       "destination": "/data/imports/long", "mode": mode})


def copied(world: CopyWorld) -> dict[str, bytes]:
    target = world.hdfs("/data/imports/long")
    return {str(p.relative_to(target)): p.read_bytes() for p in target.rglob("*")
            if p.is_file() and p.name != "_SUCCESS"}


@pytest.mark.slow
def test_heartbeat_keeps_the_message_invisible_through_a_copy_longer_than_its_timeout(
        world: CopyWorld) -> None:
    world.put_dataset("exports/long/", FILES)
    world.tell_hadoop(pause_s=6)  # the copy takes > visibility_timeout_s (4 s)
    world.send(request("long-1"))
    seen_by_others: list[dict] = []
    stop = threading.Event()

    def second_consumer() -> None:  # another worker polling the same queue
        while not stop.is_set():
            seen_by_others.extend(world.sqs.receive_message(
                QueueUrl=world.queue_url, WaitTimeSeconds=1).get("Messages", []))

    spy = threading.Thread(target=second_consumer)
    with world.running_worker(visibility_timeout_s=4, heartbeat_s=1) as worker:
        wait_for(lambda: (world.item("long-1") or {}).get("state") == "running", 30, worker)
        spy.start()  # only now: before, the spy could take the message from the worker
        try:
            wait_for(lambda: world.item("long-1")["state"] == "verified", 30, worker)
        finally:
            stop.set()
            spy.join()

    assert seen_by_others == []
    assert len(world.invocations()) == 1
    assert world.item("long-1")["attempts"] == 1
    assert world.item("long-1")["duration_ms"] >= 6000
    assert copied(world) == FILES


@pytest.mark.slow
def test_worker_killed_mid_copy_is_redone_once_by_the_next_worker(world: CopyWorld) -> None:
    world.put_dataset("exports/long/", FILES)
    world.tell_hadoop(pause_s=60)
    world.send(request("crash-1", mode="overwrite"))
    proc = world.start_worker_process(world.config(visibility_timeout_s=3, heartbeat_s=1))
    try:
        wait_for(lambda: world.invocations() and (copied(world) or {}))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the host goes down: worker and its distcp
        proc.wait()
    calls = [json.loads(line) for line in world.log.read_text().splitlines()]
    for call in calls:
        _kill(call["pid"])
    assert world.item("crash-1")["state"] == "running"
    assert len(copied(world)) == 1  # a partial copy left behind
    world.tell_hadoop()

    world.run_until(lambda: (world.item("crash-1") or {}).get("state") == "verified",
                    visibility_timeout_s=3, heartbeat_s=1)

    item = world.item("crash-1")
    assert item["attempts"] == 2
    assert [h["state"] for h in item["history"]] == ["running", "running", "verified"]
    assert copied(world) == FILES
    assert len(world.invocations()) == 2
    world.send(request("crash-1", mode="overwrite"))  # one more redelivery
    world.run_until_idle()
    assert len(world.invocations()) == 2
    assert world.queue_depth(world.queue_url) == 0


def test_failed_copy_is_retried_with_backoff_and_then_verified(world: CopyWorld) -> None:
    world.put_dataset("exports/long/", FILES)
    world.tell_hadoop(fail=1)
    world.send(request("retry-1"))

    world.run_until(lambda: (world.item("retry-1") or {}).get("state") == "verified")

    item = world.item("retry-1")
    assert item["attempts"] == 2
    failed = [h for h in item["history"] if h["state"] == "failed"]
    assert len(failed) == 1 and "failing as told" in failed[0]["reason"]
    assert not failed[0]["final"]
    assert copied(world) == FILES
    assert [o["state"] for o in world.outcomes()] == ["verified"]


def test_copy_that_keeps_failing_ends_in_the_dead_letter_queue(world: CopyWorld) -> None:
    world.put_dataset("exports/long/", FILES)
    world.tell_hadoop(fail_always=True)
    world.send(request("doomed-1"))

    world.run_until(lambda: world.queue_depth(world.dlq_url) == 1)

    item = world.item("doomed-1")
    assert item["state"] == "failed"
    assert item["final"] is True
    assert item["attempts"] == 3  # max_attempts = the queue's maxReceiveCount
    assert "exited with status 1" in item["reason"]
    assert len(world.invocations()) == 3
    [outcome] = world.outcomes()
    assert outcome["state"] == "failed" and outcome["request_id"] == "doomed-1"
    [dead] = world.sqs.receive_message(QueueUrl=world.dlq_url)["Messages"]
    assert json.loads(dead["Body"])["request_id"] == "doomed-1"


def test_hung_distcp_is_stopped_at_the_timeout_and_retried(world: CopyWorld) -> None:
    world.put_dataset("exports/long/", FILES)
    world.tell_hadoop(hang=True)
    world.send(request("hang-1"))

    world.run_until(lambda: (world.item("hang-1") or {}).get("state") == "failed",
                    copy_timeout_s=2)
    hung_pid = json.loads(world.log.read_text().splitlines()[0])["pid"]
    assert not _alive(hung_pid)
    assert "still running after 2 s" in world.item("hang-1")["reason"]
    world.tell_hadoop()
    world.run_until(lambda: world.item("hang-1")["state"] == "verified", copy_timeout_s=2)
    assert copied(world) == FILES


def test_copy_whose_result_does_not_match_is_not_verified(world: CopyWorld) -> None:
    world.put_dataset("exports/long/", FILES)
    world.tell_hadoop(corrupt=True)
    world.send(request("bad-1"))

    world.run_until(lambda: (world.item("bad-1") or {}).get("state") == "failed")

    item = world.item("bad-1")
    assert item["reason"].startswith("verification:")
    assert "expected" in item["reason"]
    assert world.queue_depth(world.queue_url) == 1  # kept for the retry
    world.tell_hadoop()
    world.run_until(lambda: world.item("bad-1")["state"] == "verified")
    assert copied(world) == FILES


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
