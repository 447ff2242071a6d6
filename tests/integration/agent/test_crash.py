"""The real agent process, killed with SIGKILL at random moments during a replay of more than
100k events, restarted each time: every event arrives, duplicates are only whole re-sent
messages, and a dedup on (cluster, txid, index) leaves each group in order."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hdfs_events.ids import message_group_id
from tests.kit.workload import write_edit_log
from tests.unit.agent.chain import check_covered

from .conftest import (
    REPO,
    Drainer,
    check_delivery,
    create_fifo_queue,
    event_keys_by_message,
    event_messages,
    manifests,
    source_events,
)

KILLS = 6
OPS = 600_000  # ~214k events with the workload's mix


def saved_txid(path: Path) -> int | None:
    try:
        return json.loads(path.read_text())["txid"]
    except (FileNotFoundError, ValueError):
        return None  # not written yet (the rename makes a torn read impossible)


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_nothing(moto_endpoint: str, tmp_path: Path,
                                                 agent_toml) -> None:
    edits = tmp_path / "edits.xml"
    summary = write_edit_log(edits, ops=OPS, seed=20)
    assert summary.events >= 100_000
    url = create_fifo_queue()
    toml = agent_toml(url, extra='[filter]\nignore_patterns = ["\\\\._COPYING_$"]\n')
    checkpoint = tmp_path / "checkpoint.json"
    env = {**os.environ, "AWS_ENDPOINT_URL": moto_endpoint, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "onprem_agent.cli", "replay", "--config", str(toml),
               "--edits", str(edits)]
    rng = random.Random(2024)
    kills, runs = 0, 0
    checkpoints = []
    with Drainer(url) as drainer:
        while True:
            runs += 1
            assert runs <= 4 * KILLS, f"no progress: checkpoints {checkpoints}"
            before = saved_txid(checkpoint)
            proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            if kills < KILLS:
                # A random moment after this run has made some progress, so the test ends.
                while saved_txid(checkpoint) == before and proc.poll() is None:
                    time.sleep(0.02)
                # Soon after: each run must leave work for the next, or the replay ends
                # before the last kill (a run ships ~50k txids a second here, and its first
                # checkpoint waits for a manifest's acknowledgement, so it has shipped more
                # by the time the checkpoint moves).
                time.sleep(rng.uniform(0.0, 0.15))
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    kills += 1
                proc.wait(60)
                assert not (proc.returncode == 0 and saved_txid(checkpoint) == summary.last_txid), (
                    f"the replay finished after only {kills} kills: kill sooner")
                checkpoints.append(saved_txid(checkpoint))
                continue
            assert proc.wait(600) == 0
            break
        received = drainer.finish()
    assert kills == KILLS and runs == KILLS + 1
    assert checkpoints == sorted(checkpoints)  # never moved backwards
    assert saved_txid(checkpoint) == summary.last_txid
    expected = source_events(edits, "c1", ignore_patterns=[r"\._COPYING_$"])
    duplicates = check_delivery(received, expected,
                                lambda e: message_group_id("c1", e.path, "prefix:2"))
    # Each run's ranges start at the checkpoint it resumed from: overlaps, never a hole, and
    # every event is named by a range covering its txid.
    ranges = check_covered(manifests(received), event_keys_by_message(received),
                           [e.key for e in expected], start=None, end=summary.last_txid)
    print(f"{len(expected)} events, {len(event_messages(received))} messages, {duplicates} "
          f"duplicate events, {len(ranges)} manifest ranges after {kills} SIGKILLs; "
          f"checkpoints {checkpoints}")
