"""The demo's HDFS side: a real NameNode, a client workload on it, the edit-log backfill of its
history and the live agent watching the rest.

- The NameNode and DataNode are Hadoop's own (tests/kit/hadoop: a MiniDFSCluster in a process
  of its own); the workload is the generated one as client calls (tests/kit/client_workload.py).
- Backfill: the first part of the workload runs before any agent; its finalized edit segments,
  turned to XML by Hadoop's OfflineEditsViewer, go through `hdfs-events-agent replay`, which
  leaves its checkpoint where the history ends.
- Live: `hdfs-events-agent run` starts from that checkpoint (same file) and reads the
  NameNode's inotify stream while the rest of the workload runs; it is killed with SIGKILL once
  mid-stream and restarted, as systemd would, and stopped with SIGTERM once it has shipped the
  last event.
- The source of truth is Hadoop's own DFSInotifyEventInputStream read by a plain Java program
  (InotifyReader), over every txid the NameNode wrote.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hdfs_events.event import HdfsEvent
from tests.kit.client_workload import run_calls
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.live_agent import AGENT
from tests.kit.local_chain import REPO, Chain


@dataclass
class Backfill:
    segments: int
    last_txid: int  # the history's last txid, where the live agent takes over


def backfill(chain: Chain, hdfs: HdfsCluster, config: Path) -> Backfill:
    """The NameNode's finalized segments through OfflineEditsViewer and `replay`."""
    next_txid = hdfs.roll_edits()
    xmls = [hdfs.edits_xml(segment, chain.work / f"{segment.name}.xml")
            for segment in hdfs.edit_segments()]
    chain.replay(xmls, config=config)
    return Backfill(segments=len(xmls), last_txid=next_txid - 1)


@dataclass
class LiveRun:
    uri: str
    exits: list[int] = field(default_factory=list)
    kills: int = 0
    seconds: float = 0.0
    workload_seconds: float = 0.0


def watch_live(chain: Chain, hdfs: HdfsCluster, ops: Sequence[Sequence[Any]], config: Path, *,
               kills: int = 1, seed: int = 0, kill_within_s: float = 0.6,
               say: Callable[[str], None] = print) -> tuple[LiveRun, list[HdfsEvent]]:
    """Runs the agent live while `ops` run on the NameNode; returns the run and what Hadoop's
    own reader yields for every txid the NameNode wrote (the source of truth)."""
    run, rng = LiveRun(uri=hdfs.uri), random.Random(seed)
    checkpoint = chain.checkpoint_path()
    log = chain.work / "agent-live.log"
    started = time.monotonic()
    errors: list[BaseException] = []
    stop = threading.Event()

    def client() -> None:
        t0 = time.monotonic()
        try:
            run_calls(hdfs, ops, stop)
        except BaseException as exc:  # re-raised in the main thread
            errors.append(exc)
        run.workload_seconds = time.monotonic() - t0

    agent = _start_agent(config, log)
    writer = threading.Thread(target=client, name="hdfs-client")
    writer.start()
    try:
        while run.kills < kills and Chain.shipping(agent, checkpoint, 120):
            # Mid-stream: SQS has acknowledged some live events, more are in flight or unread.
            time.sleep(rng.uniform(0, kill_within_s))
            if agent.poll() is not None:
                break
            agent.send_signal(signal.SIGKILL)
            agent.wait()
            run.kills += 1
            run.exits.append(-9)
            say("  agent killed with SIGKILL mid-stream; restarted (as systemd's Restart=always)")
            agent = _start_agent(config, log)
        writer.join()
        if errors:
            raise errors[0]
        end = hdfs.txid()
        say(f"  workload done in {run.workload_seconds:.1f} s; the NameNode is at txid {end}; "
            "reading it back with Hadoop's own DFSInotifyEventInputStream (plain Java)")
        events = hadoop_events(hdfs, chain.cluster, end)
        _wait_for_checkpoint(agent, checkpoint, events[-1].txid if events else 0, log)
        agent.send_signal(signal.SIGTERM)
        code = agent.wait(timeout=120)
        run.exits.append(code)
        if code != 0:
            raise RuntimeError(f"the live agent exited {code} on SIGTERM; see {log}")
    finally:
        stop.set()
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        writer.join()
    run.seconds = time.monotonic() - started
    return run, events


def hadoop_events(hdfs: HdfsCluster, cluster: str, end: int) -> list[HdfsEvent]:
    """Every event up to txid `end` as Hadoop's DFSInotifyEventInputStream yields it, read in
    plain Java (InotifyReader), with the cluster's name."""
    return [HdfsEvent.from_dict({**row, "cluster": cluster})
            for row in hdfs.java_events(0, end)]


def _start_agent(config: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen([str(AGENT), "run", "--config", str(config)], stdout=out,
                                stderr=out, cwd=REPO)


def _checkpoint_txid(path: Path) -> int:
    try:
        return int(json.loads(path.read_text())["txid"])
    except (FileNotFoundError, ValueError, KeyError):
        return -1


def _wait_for_checkpoint(agent: subprocess.Popen[bytes], checkpoint: Path, txid: int,
                         log: Path, timeout_s: float = 300) -> None:
    """Until the checkpoint reaches `txid`: it rests only on what SQS acknowledged."""
    deadline = time.monotonic() + timeout_s
    while _checkpoint_txid(checkpoint) < txid:
        if agent.poll() is not None:
            raise RuntimeError(f"the live agent exited {agent.returncode}; see {log}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the live agent's checkpoint never reached txid {txid}; "
                               f"see {log}")
        time.sleep(0.1)
