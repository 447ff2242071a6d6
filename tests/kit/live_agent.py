"""`hdfs-events-agent run` as an edge node runs it: its own process, its own JVM (the client
jars pyspark ships), a TOML config naming the cluster's `hdfs://` URI and conf dir, AWS reached
through the standard environment (AWS_ENDPOINT_URL points at moto server in tests)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from onprem_agent.checkpoint import DynamoCheckpointStore
from onprem_agent.config import load_config

AGENT = Path(sys.executable).parent / "hdfs-events-agent"


def write_agent_config(directory: Path, *, cluster: str, queue_url: str, uri: str,
                       conf_dir: Path, checkpoint_txid: int | None = None,
                       state_table: str | None = None, extra: str = "", hdfs_extra: str = "",
                       inotify_extra: str = "", heartbeat_interval_s: int = 0) -> Path:
    """agent.toml with a file checkpoint, or the checkpoint item of the DynamoDB agent-state
    table `state_table` (at `checkpoint_txid` when given: the agent resumes after it; else
    none, a first start), and short poll, linger and checkpoint intervals. `extra` adds
    sections, `hdfs_extra` and `inotify_extra` keys of [hdfs] and [inotify]; no CloudWatch
    heartbeat unless an interval is given."""
    directory.mkdir(parents=True, exist_ok=True)
    checkpoint = directory / "checkpoint.json"
    checkpoint.unlink(missing_ok=True)
    if state_table is not None:
        store = f'store = "dynamodb"\ntable = "{state_table}"'
        if checkpoint_txid is not None:
            DynamoCheckpointStore(state_table, cluster).save(checkpoint_txid)
    else:
        store = f'path = "{checkpoint}"'
        if checkpoint_txid is not None:
            checkpoint.write_text(json.dumps({"txid": checkpoint_txid}))
    config = directory / "agent.toml"
    config.write_text(
        f'cluster = "{cluster}"\n'
        f'[sqs]\nqueue_url = "{queue_url}"\n'
        f'[checkpoint]\n{store}\ninterval_ms = 100\n'
        f'[packing]\nlinger_ms = 50\n'
        f'[hdfs]\nuri = "{uri}"\nconf_dir = "{conf_dir}"\n{hdfs_extra}'
        f'[inotify]\npoll_timeout_ms = 50\n{inotify_extra}'
        f'[metrics]\nprometheus_port = 0\nheartbeat_interval_s = {heartbeat_interval_s}\n'
        + extra,
        encoding="utf-8")
    return config


@dataclass
class AgentProcess:
    """One `hdfs-events-agent` command (`run` by default; `sync run` for the sync) in its own
    process, its output in a log beside the config."""

    config: Path
    log: Path
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, config: Path, *args: str, command: tuple[str, ...] = ("run",),
              log_suffix: str = ".log") -> AgentProcess:
        log = config.with_suffix(log_suffix)
        with log.open("ab") as out:
            process = subprocess.Popen([str(AGENT), *command, "--config", str(config), *args],
                                       stdout=out, stderr=out, env=dict(os.environ))
        return cls(config, log, process)

    def checkpoint(self) -> int | None:
        config = load_config(self.config)
        if config.checkpoint.store == "dynamodb":
            assert config.checkpoint.table is not None
            return DynamoCheckpointStore(config.checkpoint.table, config.cluster).load()
        assert config.checkpoint.path is not None
        try:
            return int(json.loads(config.checkpoint.path.read_text())["txid"])
        except (FileNotFoundError, ValueError, KeyError):
            return None

    def wait_for_checkpoint(self, txid: int, timeout_s: float = 120) -> None:
        """Until the agent's checkpoint reaches `txid`: everything up to it was acknowledged
        by SQS (the checkpoint rests only on an acknowledged manifest's end)."""
        self.wait_until(self.checkpoint, txid, "checkpoint", timeout_s)

    def wait_until(self, progress: Callable[[], int | None], txid: int, what: str,
                   timeout_s: float = 120) -> None:
        """Until `progress()` (a txid the process saved) reaches `txid`."""
        self.wait_for(lambda: (progress() or -1) >= txid,
                      lambda: f"{what} {progress()} never reached {txid}", timeout_s)

    def wait_for(self, done: Callable[[], bool], stuck: Callable[[], str],
                 timeout_s: float = 120, poll_s: float = 0.05) -> None:
        """Until `done()`; fails with `stuck()` and the log's tail when time runs out, or with
        the exit code and the log's tail when the process exits first."""
        deadline = time.monotonic() + timeout_s
        while not done():
            if self.process.poll() is not None:
                raise AssertionError(f"{self.log.name}: exited {self.process.returncode} "
                                     f"before it was done: {self.log_tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{stuck()}: {self.log_tail()}")
            time.sleep(poll_s)

    def stop(self, timeout_s: float = 60) -> int:
        """SIGTERM, as systemd stops it: the agent flushes, saves its checkpoint, exits."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout_s)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
