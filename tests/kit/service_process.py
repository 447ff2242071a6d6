"""A local stand-in for one AWS service in a process of its own, reached over HTTP on a free
loopback port: moto server for one service (`moto_service`), or the kit's DynamoDB double
(`dynamodb_double`). Separate services are separate processes on AWS too; here each gets its own
interpreter (its own GIL), so one service's load does not slow another's calls.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ServiceProcess:
    process: subprocess.Popen[bytes]
    endpoint: str

    @classmethod
    def start(cls, argv: Callable[[int], list[str]], log: Path, timeout_s: float = 180,
              tries: int = 3) -> ServiceProcess:
        """Runs `argv(port)` (which serves on `port`, a free one) and returns once the port
        takes connections. A port free when probed can be taken before the child binds it
        (its imports take seconds on a loaded machine, while other processes bind and connect
        from the same ephemeral range), so a child that exits before it serves is started
        again on another free port, up to `tries` times."""
        for attempt in range(1, tries + 1):
            port = free_port()
            with log.open("wb") as out:
                process = subprocess.Popen(argv(port), stdout=out, stderr=subprocess.STDOUT,
                                           cwd=REPO)
            if _serves(process, port, time.monotonic() + timeout_s):
                return cls(process, f"http://127.0.0.1:{port}")
            timed_out = process.poll() is None  # else it exited before it served
            process.kill()
            process.wait()
            if timed_out or attempt == tries:
                raise RuntimeError(f"{argv(port)[:3]} did not serve on {port}: "
                                   f"{log.read_text(errors='replace')[-2000:]}")
        raise AssertionError("unreachable: the last try returns or raises")

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _serves(process: subprocess.Popen[bytes], port: int, deadline: float) -> bool:
    """Whether `port` takes connections before `process` exits or the deadline passes."""
    while process.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def moto_service(log: Path) -> ServiceProcess:
    """moto server (its own CLI, all services, with the kit's fixes: tests/kit/moto_fixes.py;
    the caller points one service's endpoint at it)."""
    return ServiceProcess.start(lambda port: [sys.executable, "-m", "tests.kit.moto_fixes", "-H",
                                              "127.0.0.1", "-p", str(port)], log)


def dynamodb_double(log: Path, latency_ms: float) -> ServiceProcess:
    return ServiceProcess.start(lambda port: [sys.executable, "-m", "tests.kit.dynamodb_server",
                                              "--port", str(port), "--latency-ms",
                                              str(latency_ms)], log)
