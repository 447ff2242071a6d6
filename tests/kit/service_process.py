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
    def start(cls, argv: list[str], port: int, log: Path, timeout_s: float = 60) -> ServiceProcess:
        """Runs `argv` (which serves on `port`) and returns once the port takes connections."""
        with log.open("wb") as out:
            process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return cls(process, f"http://127.0.0.1:{port}")
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    process.kill()
                    raise RuntimeError(f"{argv[:3]} did not serve on {port}: "
                                       f"{log.read_text(errors='replace')[-2000:]}") from None
                time.sleep(0.05)

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


def moto_service(log: Path) -> ServiceProcess:
    """moto server (its own CLI, all services, with the kit's fixes: tests/kit/moto_fixes.py;
    the caller points one service's endpoint at it)."""
    port = free_port()
    return ServiceProcess.start([sys.executable, "-m", "tests.kit.moto_fixes", "-H", "127.0.0.1",
                                 "-p", str(port)], port, log)


def dynamodb_double(log: Path, latency_ms: float) -> ServiceProcess:
    port = free_port()
    return ServiceProcess.start([sys.executable, "-m", "tests.kit.dynamodb_server", "--port",
                                 str(port), "--latency-ms", str(latency_ms)], port, log)
