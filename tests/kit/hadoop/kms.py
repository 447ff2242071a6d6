"""Hadoop's KMS on this machine, for encryption zones: `KeyServer.start(base_dir)`.

    with KeyServer.start(tmp / "kms", wait=False) as kms:   # its port is chosen up front:
        HdfsCluster.start(tmp / "hdfs", conf=kms.provider_conf())  # both start at once
        kms.wait_ready()
        kms.create_key("k1")                                  # REST, as `hadoop key create`

It runs Hadoop's own MiniKMS (hadoop-kms's test jar), as TestEncryptionZonesWithKMS starts it:
a JavaKeyStoreProvider in the conf dir, simple authentication, every ACL open. In a process and
JVM of its own (`python -m tests.kit.hadoop.kms BASE_DIR`) on `.hadoop/kms` (kms/pom.xml): the
KMS is built on the unshaded hadoop-common, which must not share a JVM with the NameNode's
shaded jars. The NameNode and every client reach it over HTTP, as they would a KMS
beside a real cluster. Start-up takes ~15 s on 2 busy cores (Jersey scans its classes).
"""

from __future__ import annotations

import glob
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.kit.hadoop.jars import JAVA17_OPENS, REPO, HadoopJarsMissing

KMS_LIB = REPO / ".hadoop" / "kms"
_START_TIMEOUT_S = 120
# The user the test process talks to the KMS as (simple auth: the user.name query parameter).
KEY_ADMIN = "hdfs-events"


class KeyServer:
    def __init__(self, process: subprocess.Popen[bytes], port: int, base_dir: Path) -> None:
        self._process, self.base_dir = process, base_dir
        self.url = f"http://localhost:{port}/kms"

    @classmethod
    def start(cls, base_dir: Path, *, wait: bool = True) -> KeyServer:
        """wait=False: return at once (the URL is known); wait_ready() before the first use."""
        kms_jars()
        base_dir.mkdir(parents=True, exist_ok=True)
        (base_dir / "kms.url").unlink(missing_ok=True)
        with socket.socket() as probe:  # a free port now; the KMS binds it a few seconds later
            probe.bind(("localhost", 0))
            port = probe.getsockname()[1]
        log = (base_dir / "kms.log").open("ab")
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.kit.hadoop.kms", str(base_dir), str(port)],
            stdin=subprocess.PIPE, stdout=log, stderr=log, cwd=REPO)
        server = cls(process, port, base_dir)
        if wait:
            server.wait_ready()
        return server

    def wait_ready(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not (self.base_dir / "kms.url").exists():
            if self._process.poll() is not None or time.monotonic() > deadline:
                self._process.kill()
                raise RuntimeError(f"the KMS did not start: see {self.base_dir}/kms.log")
            time.sleep(0.1)

    @property
    def provider_uri(self) -> str:
        """The KeyProvider URI Hadoop's configuration names a KMS by (kms://http@host:port/kms)."""
        return "kms://" + self.url.replace("://", "@", 1)

    def provider_conf(self) -> dict[str, str]:
        """What a NameNode (and a client) needs to use this KMS."""
        return {"hadoop.security.key.provider.path": self.provider_uri}

    def create_key(self, name: str, *, bits: int = 128) -> dict[str, object]:
        """A new key, through the KMS's REST API (what `hadoop key create` sends)."""
        body = json.dumps({"name": name, "cipher": "AES/CTR/NoPadding", "length": bits})
        request = urllib.request.Request(
            f"{self.url}/v1/keys?user.name={KEY_ADMIN}", data=body.encode(), method="POST",
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def key_names(self) -> list[str]:
        with urllib.request.urlopen(f"{self.url}/v1/keys/names?user.name={KEY_ADMIN}",
                                    timeout=30) as response:
            return list(json.loads(response.read()))

    def stop(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()  # the server's signal to stop
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> KeyServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def kms_jars() -> list[str]:
    found = sorted(glob.glob(str(KMS_LIB / "*.jar")))
    if not any("hadoop-kms" in j and "tests" in j for j in found):
        raise HadoopJarsMissing(f"Hadoop's KMS jars are not in {KMS_LIB}: run `make hadoop`")
    return found


def main() -> None:
    """The server process: MiniKMS until stdin closes."""
    import jpype

    base_dir, port = Path(sys.argv[1]).resolve(), int(sys.argv[2])
    conf_dir = base_dir / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    log4j = (Path(__file__).parent / "log4j.properties").as_uri()
    # The kit's log4j.properties also names the NameNode's audit file under hdfs.kit.base_dir.
    jpype.startJVM("-Xmx256m", "-Xrs", f"-Dlog4j.configuration={log4j}",
                   f"-Dhdfs.kit.base_dir={base_dir}", *JAVA17_OPENS, classpath=kms_jars(),
                   convertStrings=True)
    builder = jpype.JClass("org.apache.hadoop.crypto.key.kms.server.MiniKMS$Builder")()
    kms = builder.setKmsConfDir(jpype.JClass("java.io.File")(str(conf_dir))).setLog4jConfFile(
        log4j).setPort(port).build()
    kms.start()
    url = str(kms.getKMSUrl().toExternalForm())
    # The ready mark: written whole, then renamed, so it is never seen half written.
    (base_dir / "kms.url.tmp").write_text(url)
    os.replace(base_dir / "kms.url.tmp", base_dir / "kms.url")
    sys.stdin.read()
    kms.stop()
    # Jetty and the key provider leave non-daemon threads behind: the process is done.
    os._exit(0)


if __name__ == "__main__":
    main()
