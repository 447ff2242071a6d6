"""The demo's audit side: `hdfs-events-agent audit run` in its own process, tailing the audit log
the NameNode writes through log4j (tests/kit/hadoop/log4j.properties) into the lake bucket's
raw-audit/, while the live phase runs; stopped with SIGTERM once its saved position has passed
every line written before the workload ended."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from onprem_agent.audit.logfiles import RotatingLog, file_id
from onprem_agent.audit.position import load_position
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.live_agent import AgentProcess
from tests.kit.local_chain import Chain

AUDIT_LOG = "hdfs-audit.log"  # the live file's name in log4j.properties


@dataclass(frozen=True, slots=True)
class AuditRun:
    seconds: float
    exit_code: int
    files: int  # audit files the NameNode had written (live and rotated) when the workload ended


@dataclass
class DemoAudit:
    chain: Chain
    hdfs: HdfsCluster
    agent: AgentProcess | None = None
    started: float = 0.0

    def start(self) -> DemoAudit:
        config = self.chain.agent_config("audit", audit_dir=self.hdfs.audit_dir)
        self.agent = AgentProcess.start(config, command=("audit", "run"),
                                        log_suffix=".audit.log")
        self.started = time.monotonic()
        return self

    @property
    def state_file(self) -> Path:
        return self.chain.work / "audit.position.json"

    def finish(self, timeout_s: float = 300) -> AuditRun:
        """Call once the workload is done: waits until the saved position (saved only after
        the object holding the lines before it is in S3) is at the end of what the live file
        held now, or in a file log4j made later; then SIGTERM."""
        assert self.agent is not None
        log = RotatingLog(self.hdfs.audit_dir, AUDIT_LOG)
        files = log.files()
        older = {ident for path in files[:-1] if (ident := _identity(path)) is not None}
        live = _identity(log.live)
        end = log.live.stat().st_size

        def shipped() -> bool:
            pos = load_position(self.state_file)
            return pos is not None and ((pos.file_id == live and pos.offset >= end)
                                        or pos.file_id not in older | {live})

        self.agent.wait_for(shipped, lambda: f"`audit run` never shipped the audit log's end "
                            f"({live} at {end}); position {load_position(self.state_file)}",
                            timeout_s, poll_s=0.1)
        code = self.agent.stop(timeout_s=120)
        if code != 0:
            raise RuntimeError(f"`audit run` exited {code} on SIGTERM: {self.agent.log_tail()}")
        return AuditRun(seconds=time.monotonic() - self.started, exit_code=code,
                        files=len(files))

    def kill(self) -> None:
        if self.agent is not None and self.agent.process.poll() is None:
            self.agent.kill()


def _identity(path: Path) -> str | None:
    try:
        with path.open("rb") as f:
            return file_id(f)
    except FileNotFoundError:
        return None
