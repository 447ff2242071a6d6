"""`HdfsCluster`: a real HDFS in a process of its own (host.py), driven from Python.

    with HdfsCluster.start(tmp_path, kind="single") as hdfs:
        hdfs.run([["mkdirs", "/data"], ["write", "/data/a", "hello"]])
        hdfs.uri, hdfs.conf_dir      # what the agent's [hdfs] uri and conf_dir take

kind="secure" adds a Kerberos realm (realm.py: MiniKdc, EXAMPLE.COM) and runs the NameNode and
DataNode with Kerberos RPC and block tokens; `hdfs.kerberos` then names the krb5.conf a client
JVM needs and each user's principal and keytab (`hdfs-events`: a superuser; `alice`: not).

Start-up takes ~6 s on 2 cores (HA: more): start one per test module, not per test.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Listener
from pathlib import Path
from typing import Any

from tests.kit.hadoop.jars import LIB, jars, java

_START_TIMEOUT_S = 180


class HdfsError(RuntimeError):
    """A call into the cluster's process failed; the message is Hadoop's."""


@dataclass(frozen=True, slots=True)
class Kerberos:
    """What a client of the secure cluster needs: krb5.conf, and per user a principal and
    keytab."""
    krb5_conf: Path
    principals: dict[str, str]
    keytabs: dict[str, Path]


class HdfsCluster:
    def __init__(self, process: subprocess.Popen[bytes], conn: Any, info: dict[str, Any],
                 base_dir: Path, started_s: float) -> None:
        self._process, self._conn = process, conn
        self.uri: str = info["uri"]
        self.conf_dir = Path(info["conf_dir"])
        self.base_dir = base_dir
        # The NameNode's audit log (log4j.properties: a RollingFileAppender of 20 KB).
        self.audit_dir = base_dir / "audit"
        self.pid: int = info["pid"]
        self.kerberos: Kerberos | None = None
        self.started_s = started_s  # wall time from spawning the JVM to an active NameNode

    @classmethod
    def start(cls, base_dir: Path, *, kind: str = "single", conf: dict[str, str] | None = None,
              datanodes: int = 1, ticket_lifetime_s: int | None = None,
              image: Path | None = None, heap: str = "1g") -> HdfsCluster:
        """kind: "single", "ha" or "secure"; ticket_lifetime_s: the KDC's ticket lifetime
        (secure only; default one day); image: a prepared name directory to start on instead
        of formatting one (single only; namespace_image.py); heap: the NameNode JVM's -Xmx (a
        NameNode holds its whole namespace: ~6g for 10M files)."""
        jars()  # a clear error before spawning when `make hadoop` has not run
        base_dir.mkdir(parents=True, exist_ok=True)
        authkey = secrets.token_bytes(16)
        address = str(base_dir / "host.sock")
        started = time.monotonic()
        listener = Listener(address, family="AF_UNIX", authkey=authkey)
        log = (base_dir / "host.log").open("ab")
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.kit.hadoop.host", address, str(base_dir.resolve()),
             heap],
            stdin=subprocess.PIPE,
            stdout=log, stderr=log, cwd=Path(__file__).resolve().parents[3])
        assert process.stdin is not None
        process.stdin.write(authkey.hex().encode() + b"\n")
        process.stdin.close()
        listener._listener._socket.settimeout(_START_TIMEOUT_S)  # accept() has no timeout
        try:
            conn = listener.accept()
        except OSError as exc:
            process.kill()
            raise HdfsError(f"the cluster process did not connect: see {base_dir}/host.log"
                            ) from exc
        finally:
            listener.close()
        cluster = cls(process, conn, {"uri": "", "conf_dir": "", "pid": process.pid}, base_dir,
                      0.0)
        try:
            info = cluster._call("start", kind=kind, base_dir=str(base_dir), conf=conf or {},
                                 datanodes=datanodes, ticket_lifetime_s=ticket_lifetime_s,
                                 image=str(image) if image else None)
        except BaseException:
            cluster.kill()
            raise
        cluster.uri, cluster.conf_dir = info["uri"], Path(info["conf_dir"])
        if "kerberos" in info:
            k = info["kerberos"]
            cluster.kerberos = Kerberos(
                krb5_conf=Path(k["krb5_conf"]), principals=dict(k["principals"]),
                keytabs={user: Path(path) for user, path in k["keytabs"].items()})
        cluster.started_s = time.monotonic() - started
        return cluster

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        self._conn.send((method, args, kwargs))
        status, result = self._conn.recv()
        if status != "ok":
            raise HdfsError(f"{method}: {result} (log: {self.base_dir}/host.log)")
        return result

    # -- client workload ----------------------------------------------------------------------
    def run(self, ops: Sequence[Sequence[Any]]) -> list[Any]:
        """Runs workload operations (see ops.py) in order through the FileSystem API."""
        return self._call("run", [list(op) for op in ops])

    # -- the NameNode -------------------------------------------------------------------------
    def txid(self) -> int:
        return self._call("txid")

    def roll_edits(self) -> int:
        return self._call("roll_edits")

    def checkpoint(self) -> None:
        self._call("checkpoint")

    def purge_edits_through(self, txid: int) -> None:
        """Rolls and checkpoints until the NameNode no longer holds txid (needs the cluster
        started with num.checkpoints.retained=1 and few num.extra.edits.retained)."""
        for _ in range(5):
            self.run([["mkdirs", "/.purge-marker"], ["delete", "/.purge-marker"]])
            self.roll_edits()
            self.checkpoint()
            first = min(_segment_range(s)[0] for s in self.edit_segments())
            if first > txid:
                return
        raise HdfsError(f"txid {txid} still held after five checkpoints: is the cluster "
                        "configured to purge?")

    def edit_segments(self) -> list[Path]:
        return [Path(p) for p in self._call("edit_segments")]

    def rotate_key(self, user: str) -> None:
        """New keys for `user` in the KDC: the keytab handed out at start is stale from now on
        (secure only)."""
        self._call("rotate_key", user)

    def failover(self, to: int) -> None:
        self._call("failover", to)

    def shutdown_namenode(self, index: int) -> None:
        self._call("shutdown_namenode", index)

    def restart_namenode(self, index: int, *, wait_active: bool = False) -> None:
        """wait_active: return once it is out of safe mode with its DataNodes (writes work)."""
        self._call("restart_namenode", index, wait_active)

    # -- Hadoop's own tools, as separate JVMs ----------------------------------------------------
    def edits_xml(self, segment: Path, out: Path) -> Path:
        """Hadoop's OfflineEditsViewer (`hdfs oev -p xml`) over one edit segment."""
        self._java("org.apache.hadoop.hdfs.tools.offlineEditsViewer.OfflineEditsViewer",
                   "-i", str(segment), "-o", str(out), "-p", "xml")
        return out

    def java_events(self, after: int, end: int) -> list[dict[str, Any]]:
        """Events (after, end] as Hadoop's DFSInotifyEventInputStream yields them, read by a
        plain Java program (InotifyReader.java). `end` must be an event's txid: the reader
        polls until it has read it, and a txid without one (a block allocation, an edit log
        roll's END/START_LOG_SEGMENT) is never read."""
        out = self._java("hdfsevents.kit.InotifyReader", "events", self.uri, str(after),
                         str(end), classpath_head=str(self.conf_dir))
        return [json.loads(line) for line in out.splitlines() if line.startswith("{")]

    def inotify_count(self, after: int, end: int) -> dict[str, float]:
        """Hadoop's own loop over DFSInotifyEventInputStream for (after, end]: poll, count,
        discard, in a JVM of its own (InotifyReader count). {"events", "batches", "seconds"},
        seconds timed inside the loop (JVM start and stream set-up left out)."""
        out = self._java("hdfsevents.kit.InotifyReader", "count", self.uri, str(after),
                         str(end), classpath_head=str(self.conf_dir))
        return json.loads(next(line for line in out.splitlines() if line.startswith("{")))

    def _java(self, main: str, *args: str, classpath_head: str | None = None) -> str:
        classpath = os.pathsep.join(([classpath_head] if classpath_head else [])
                                    + [str(LIB / "*")])
        done = subprocess.run([java(), "-Xmx512m", "-cp", classpath, main, *args],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise HdfsError(f"{main} exited {done.returncode}: {done.stderr[-2000:]}")
        return done.stdout

    # -- end ------------------------------------------------------------------------------------
    def stop(self) -> None:
        if self._process.poll() is None:
            with contextlib.suppress(HdfsError, EOFError, OSError):
                self._call("stop")
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()
        self._conn.close()

    def kill(self) -> None:
        self._process.kill()
        self._process.wait()

    def __enter__(self) -> HdfsCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _segment_range(segment: str | Path) -> tuple[int, int]:
    """edits_<first>-<last>, 19 digits each (FileJournalManager's names)."""
    first, last = Path(segment).name[len("edits_"):].split("-")
    return int(first), int(last)

