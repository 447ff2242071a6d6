"""Long copies, crashed workers, failing and slow DistCp runs: each request still ends once, and
a copy killed mid-way leaves no partial file under a final name, nor any after the retry."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading

import pytest

from .conftest import BUCKET, CopyWorld, wait_for

# 200 KB each: at DistCp's -bandwidth 0.1 (MB/s per map) a file takes ~2 s to copy.
FILES = {"part-0": b"x" * 200_000, "part-1": b"y" * 200_000, "part-2": b"z" * 200_000}
SRC = f"s3://{BUCKET}/exports/long/"
DEST = "/data/imports/long"
SLOW_DISTCP = ["hadoop", "distcp", "-bandwidth", "0.1"]
TEMPORARY = ".distcp.tmp."


def request(request_id: str, mode: str = "update") -> str:
    return json.dumps({"v": 1, "request_id": request_id, "source": SRC, "destination": DEST,
                       "mode": mode})


def copied(world: CopyWorld) -> dict[str, bytes]:
    return {name: data for name, data in world.landed(DEST).items() if name != "_SUCCESS"}


def temporaries(listing: dict[str, int]) -> list[str]:
    return [name for name in listing if name.rsplit("/", 1)[-1].startswith(TEMPORARY)]


@pytest.mark.slow
def test_heartbeat_keeps_the_message_invisible_through_a_copy_longer_than_its_timeout(
        world: CopyWorld) -> None:
    world.put_dataset("exports/long/", FILES)
    world.send(request("long-1"))
    seen_by_others: list[dict] = []
    stop = threading.Event()

    def second_consumer() -> None:  # another worker polling the same queue
        while not stop.is_set():
            seen_by_others.extend(world.sqs.receive_message(
                QueueUrl=world.queue_url, WaitTimeSeconds=1).get("Messages", []))

    spy = threading.Thread(target=second_consumer)
    # The throttled copy takes ~6 s, more than the visibility timeout (4 s).
    with world.running_worker(visibility_timeout_s=4, heartbeat_s=1,
                              distcp_command=SLOW_DISTCP) as worker:
        wait_for(lambda: (world.item("long-1") or {}).get("state") == "running", 30, worker)
        spy.start()  # only now: before, the spy could take the message from the worker
        try:
            wait_for(lambda: world.item("long-1")["state"] == "verified", 120, worker)
        finally:
            stop.set()
            spy.join()

    assert seen_by_others == []
    assert len(world.invocations()) == 1
    assert world.item("long-1")["attempts"] == 1
    assert world.item("long-1")["duration_ms"] >= 6000
    assert copied(world) == FILES


@pytest.mark.slow
def test_copy_killed_mid_way_leaves_no_partial_file_and_is_redone_once(
        world: CopyWorld) -> None:
    world.put_dataset("exports/long/", FILES)
    world.send(request("crash-1", mode="overwrite"))
    proc = world.start_worker_process(world.config(visibility_timeout_s=3, heartbeat_s=1,
                                                   distcp_command=SLOW_DISTCP))
    try:
        wait_for(lambda: _frozen_mid_way(world, proc), 300)  # generous: a loaded 2-core machine
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the host goes down: worker and its DistCp
        proc.wait()
        for call in world.calls():
            _kill(call["pid"])
    assert world.item("crash-1")["state"] == "running"
    after_kill = world.listing(DEST)
    whole = {name: size for name, size in after_kill.items() if TEMPORARY not in name}
    assert temporaries(after_kill), "the killed copy left its partial file as a temporary"
    source = {**FILES, "_SUCCESS": b""}
    assert 0 < len(whole) < len(source)
    for name in whole:  # every file under its final name is whole
        assert world.read(f"{DEST}/{name}") == source[name]

    world.run_until(lambda: (world.item("crash-1") or {}).get("state") == "verified",
                    timeout_s=300, visibility_timeout_s=3, heartbeat_s=1)

    item = world.item("crash-1")
    assert item["attempts"] == 2
    assert [h["state"] for h in item["history"]] == ["running", "running", "verified"]
    assert copied(world) == FILES
    assert temporaries(world.listing(DEST)) == []  # the killed attempt's partial file is gone
    assert len(world.invocations()) == 2
    world.send(request("crash-1", mode="overwrite"))  # one more redelivery
    world.run_until_idle()
    assert len(world.invocations()) == 2
    assert world.queue_depth(world.queue_url) == 0


def test_failed_copy_is_retried_with_backoff_and_then_verified(world: CopyWorld) -> None:
    world.put_dataset("exports/long/", FILES)
    world.hdfs.run([["write", DEST, "a file where the directory should be"]])
    world.send(request("retry-1"))

    # The retry comes back 3 s after the failure: this worker, polling 1 s at a time, has
    # stopped by then (at 1 s, a poll begun just before the stop could take it: attempt 3).
    world.run_until(lambda: (world.item("retry-1") or {}).get("state") == "failed",
                    timeout_s=120, retry_base_s=3, retry_max_s=3)
    world.hdfs.run([["delete", DEST]])  # the operator clears the way
    world.run_until(lambda: world.item("retry-1")["state"] == "verified", timeout_s=120)

    item = world.item("retry-1")
    assert item["attempts"] == 2
    failed = [h for h in item["history"] if h["state"] == "failed"]
    assert len(failed) == 1 and "distcp: exited with status" in failed[0]["reason"]
    assert not failed[0]["final"]
    assert copied(world) == FILES
    assert [o["state"] for o in world.outcomes()] == ["verified"]


@pytest.mark.slow
def test_copy_that_keeps_failing_ends_in_the_dead_letter_queue(world: CopyWorld) -> None:
    world.put_dataset("exports/long/", FILES)
    world.hdfs.run([["write", DEST, "a file where the directory should be"]])
    world.send(request("doomed-1"))

    world.run_until(lambda: world.queue_depth(world.dlq_url) == 1, timeout_s=240)

    item = world.item("doomed-1")
    assert item["state"] == "failed"
    assert item["final"] is True
    assert item["attempts"] == 3  # max_attempts = the queue's maxReceiveCount
    assert "distcp: exited with status" in item["reason"]
    assert "InvalidInputException: Cannot copy" in item["reason"], item["reason"]
    assert len(world.invocations()) == 3
    [outcome] = world.outcomes()
    assert outcome["state"] == "failed" and outcome["request_id"] == "doomed-1"
    [dead] = world.sqs.receive_message(QueueUrl=world.dlq_url)["Messages"]
    assert json.loads(dead["Body"])["request_id"] == "doomed-1"


def test_a_final_failure_received_again_keeps_its_reason_and_is_not_copied_again(
        world: CopyWorld) -> None:
    """max_attempts (1) below the queue's maxReceiveCount (3): SQS hands the final failure's
    message back instead of moving it to the DLQ; the worker deletes it and the item keeps
    DistCp's reason (it was overwritten by "received 2 times" before)."""
    world.put_dataset("exports/long/", FILES)
    world.hdfs.run([["write", DEST, "a file where the directory should be"]])
    world.send(request("doomed-2"))

    world.run_until(lambda: world.queue_depth(world.queue_url) == 0, timeout_s=120,
                    max_attempts=1)

    item = world.item("doomed-2")
    assert item["state"] == "failed" and item["final"] is True and item["attempts"] == 1
    assert "InvalidInputException: Cannot copy" in item["reason"], item["reason"]
    assert len(world.invocations()) == 1 and world.queue_depth(world.dlq_url) == 0
    [outcome] = world.outcomes()
    assert outcome["state"] == "failed"


def test_distcp_over_its_time_limit_is_stopped_and_retried(world: CopyWorld) -> None:
    world.put_dataset("exports/long/", FILES)
    world.send(request("hang-1"))

    world.run_until(lambda: (world.item("hang-1") or {}).get("state") == "failed",
                    copy_timeout_s=3, distcp_command=SLOW_DISTCP,
                    retry_base_s=3, retry_max_s=3)  # back once this worker has stopped
    [slow] = world.calls()
    assert not _alive(slow["pid"])
    assert "still running after 3 s" in world.item("hang-1")["reason"]
    world.run_until(lambda: world.item("hang-1")["state"] == "verified", timeout_s=120)
    assert copied(world) == FILES


def test_copy_whose_result_does_not_match_is_not_verified(world: CopyWorld) -> None:
    world.put_dataset("exports/long/", FILES)
    # An operator's extra DistCp filter that drops a file: DistCp succeeds, the check does not.
    drops = world.tmp / "drop-part-1.txt"
    drops.write_text(".*/part-1\n")
    world.send(request("bad-1"))

    world.run_until(lambda: (world.item("bad-1") or {}).get("state") == "failed",
                    timeout_s=120, distcp_command=["hadoop", "distcp", "-filters", str(drops)])

    item = world.item("bad-1")
    assert item["reason"] == "verification: 'part-1' missing"
    assert world.queue_depth(world.queue_url) == 1  # kept for the retry
    world.run_until(lambda: world.item("bad-1")["state"] == "verified", timeout_s=120)
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
    _signal(pid, signal.SIGKILL)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _frozen_mid_way(world: CopyWorld, worker: subprocess.Popen[bytes]) -> bool:
    """Whether the worker and its DistCp are stopped (SIGSTOP) mid-way: one file renamed into
    place, the next one still being written. A listing that saw that moment alone is not
    enough: on a loaded machine DistCp can finish the file before a kill lands."""
    listing = world.listing(DEST)
    pids = [call["pid"] for call in world.calls()]  # the launcher execs java: DistCp's JVM
    if not (pids and temporaries(listing) and len(listing) > 1):
        return False
    def all_of_them(signum: int) -> None:
        os.killpg(worker.pid, signum)
        for pid in pids:
            _signal(pid, signum)

    all_of_them(signal.SIGSTOP)
    listing = world.listing(DEST)
    if temporaries(listing) and len(listing) > 1:
        return True
    all_of_them(signal.SIGCONT)
    return False
