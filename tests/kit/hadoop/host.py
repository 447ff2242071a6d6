"""The JVM process that holds a real HDFS: `python -m tests.kit.hadoop.host ADDRESS BASE_DIR [HEAP]`.

It connects back to the test process's listener at ADDRESS (authkey on stdin, never on the
command line), then serves calls `(method, args, kwargs)` one at a time until `stop`. Hadoop
logs to this process's stderr, which cluster.py sends to `<base_dir>/host.log`.

Why a process of its own: JPype runs one JVM per process, and the agent under test runs its own
JVM with the client jars pyspark ships, exactly as on an edge node. The NameNode here uses
Hadoop's shaded minicluster jar, which must not share a JVM with another client copy.
"""

from __future__ import annotations

import os
import sys
import traceback
from multiprocessing.connection import Client
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import jpype

from tests.kit.hadoop.jars import JAVA17_OPENS, jars
from tests.kit.hadoop.namespace_image import link_name_dir
from tests.kit.hadoop.ops import Workload
from tests.kit.hadoop.realm import Realm

# The NameNode's trash emptier then lists /user at every full hour (tests/kit/image_start.py).
TRASH_INTERVAL_MIN = 60

# Client-side keys a Hadoop client needs to reach this cluster (written to <base>/conf):
# the default file system, the HA nameservice and its NameNodes, and security settings.
_CLIENT_KEY_PREFIXES = (
    "fs.defaultFS", "dfs.nameservices", "dfs.ha.namenodes.", "dfs.namenode.rpc-address.",
    # the NameNodes' HTTP servers, as a site's client config has them: `dfsadmin -fetchImage`
    "dfs.namenode.http-address", "dfs.namenode.https-address", "dfs.http.policy",
    "dfs.client.failover.proxy.provider.", "hadoop.security.authentication",
    "hadoop.security.authorization", "dfs.namenode.kerberos.principal",
    "dfs.datanode.kerberos.principal", "dfs.data.transfer.protection",
    "dfs.block.access.token.enable", "hadoop.rpc.protection",
    "hadoop.kerberos.min.seconds.before.relogin",
    # the KMS of encryption zones (kms.py), as a site's core-site.xml names it
    "hadoop.security.key.provider.path",
)


class Host:
    def __init__(self) -> None:
        self.cluster: Any = None  # MiniDFSCluster
        self.ha: Any = None  # the same MiniDFSCluster, when kind == "ha"
        self.conf: Any = None
        self.fs: Any = None
        self.workload: Workload | None = None
        self.base: Path | None = None
        self.realm: Realm | None = None  # kind == "secure"

    # -- life cycle -------------------------------------------------------------------------
    def start(self, *, kind: str, base_dir: str, conf: dict[str, str], datanodes: int = 1,
              ticket_lifetime_s: int | None = None, image: str | None = None) -> dict[str, Any]:
        self.base = Path(base_dir)
        hconf = jpype.JClass("org.apache.hadoop.hdfs.HdfsConfiguration")()
        hconf.set("hdfs.minidfs.basedir", str(self.base / "dfs"))
        hconf.setInt("dfs.replication", 1)
        # A delete or rename into .Trash, as `hdfs dfs -rm` does, needs a trash interval.
        hconf.set("fs.trash.interval", str(TRASH_INTERVAL_MIN))
        if kind == "secure":
            # The NameNode and DataNode log in from the service keytab (JVM-wide login user:
            # this process's own client workload then runs as hdfs, the superuser).
            self.realm = Realm.start(self.base / "kdc", ticket_lifetime_s=ticket_lifetime_s)
            for key, value in self.realm.server_conf().items():
                hconf.set(key, value)
        for key, value in conf.items():
            hconf.set(key, value)
        if kind == "secure":
            jpype.JClass("org.apache.hadoop.security.UserGroupInformation").setConfiguration(
                hconf)
        if image is not None:
            if kind != "single":
                raise ValueError("a prepared name directory needs kind='single'")
            # Its files' blocks are on no DataNode: with a threshold of 0 the NameNode leaves
            # safe mode at once, as `hdfs dfsadmin -safemode leave` would make it.
            hconf.set("dfs.namenode.safemode.threshold-pct", "0")
            for name_dir in ("name-0-1", "name-0-2"):  # MiniDFSCluster's two name dirs
                link_name_dir(Path(image), self.base / "dfs" / name_dir)
        if kind in ("single", "secure"):
            builder = jpype.JClass("org.apache.hadoop.hdfs.MiniDFSCluster$Builder")(hconf)
            self.cluster = builder.numDataNodes(datanodes).format(image is None).build()
            self.cluster.waitActive()
            uri = str(self.cluster.getURI())
            self.fs = self.cluster.getFileSystem()
        elif kind == "ha":
            # Two NameNodes sharing an edits directory (MiniDFSNNTopology.simpleHATopology):
            # the same HA code as production (standby tailing, failover, the client's
            # ConfiguredFailoverProxyProvider). MiniQJMHACluster would add JournalNodes, but it
            # needs hadoop-hdfs's test jar (TestEditLog$GarbageMkdirOp), which the shaded
            # minicluster jar leaves out and which cannot share a JVM with it.
            topology = jpype.JClass("org.apache.hadoop.hdfs.MiniDFSNNTopology")
            builder = jpype.JClass("org.apache.hadoop.hdfs.MiniDFSCluster$Builder")(hconf)
            self.cluster = builder.nnTopology(topology.simpleHATopology()).numDataNodes(
                datanodes).build()
            self.ha = self.cluster
            self.cluster.transitionToActive(0)
            self.cluster.waitActive()
            test_util = jpype.JClass("org.apache.hadoop.hdfs.server.namenode.ha.HATestUtil")
            self.fs = test_util.configureFailoverFs(self.cluster, hconf)
            uri = str(self.fs.getUri())
        else:
            raise ValueError(f"unknown cluster kind {kind!r}")
        self.conf = self.fs.getConf()
        self.workload = Workload(self.fs, self.conf)
        conf_dir = self._write_client_conf(uri)
        info: dict[str, Any] = {"uri": uri, "conf_dir": str(conf_dir), "pid": os.getpid()}
        if self.realm is not None:
            info["kerberos"] = {
                "krb5_conf": str(self.realm.krb5_conf),
                "keytabs": {user: str(path) for user, path in self.realm.keytabs.items()},
                "principals": {user: self.realm.principal(user) for user in self.realm.keytabs},
            }
        return info

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.shutdown()
        if self.realm is not None:
            self.realm.stop()
        self.cluster = self.ha = self.realm = None

    def rotate_key(self, user: str) -> None:
        assert self.realm is not None, "rotate_key needs kind='secure'"
        self.realm.rotate_key(user)

    def _write_client_conf(self, uri: str) -> Path:
        conf_dir = self.base / "conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        values = {"fs.defaultFS": uri}
        for entry in self.conf:
            key = str(entry.getKey())
            if key.startswith(_CLIENT_KEY_PREFIXES) and key != "fs.defaultFS":
                values[key] = str(self.conf.get(key))
        props = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value>"
                        "</property>\n" for k, v in sorted(values.items()))
        for name in ("core-site.xml", "hdfs-site.xml"):
            (conf_dir / name).write_text(
                f'<?xml version="1.0"?>\n<configuration>\n{props}</configuration>\n')
        return conf_dir

    # -- client workload ----------------------------------------------------------------------
    def run(self, ops: list[list[Any]]) -> list[Any]:
        assert self.workload is not None
        return self.workload.run(ops)

    # -- the NameNode -------------------------------------------------------------------------
    def _active(self) -> Any:
        if self.ha is None:
            return self.cluster.getNameNode()
        for i in range(2):
            nn = self.cluster.getNameNode(i)
            if nn is not None and nn.isActiveState():
                return nn
        raise RuntimeError("no active NameNode")

    def txid(self) -> int:
        """The last txid the active NameNode wrote (what a new inotify stream starts after)."""
        return int(self._active().getNamesystem().getEditLog().getLastWrittenTxId())

    def roll_edits(self) -> int:
        """Finalizes the open edit segment; returns the txid the new one starts at."""
        return int(self._active().getRpcServer().rollEditLog().getCurSegmentTxId())

    def checkpoint(self) -> None:
        """saveNamespace in safe mode, as `hdfs dfsadmin -safemode enter; -saveNamespace`:
        the only thing that purges old edit segments (num.checkpoints.retained and
        num.extra.edits.retained bound what stays)."""
        action = jpype.JClass("org.apache.hadoop.hdfs.protocol.HdfsConstants$SafeModeAction")
        rpc = self._active().getRpcServer()
        rpc.setSafeMode(action.SAFEMODE_ENTER, False)
        rpc.saveNamespace(0, 0)
        rpc.setSafeMode(action.SAFEMODE_LEAVE, False)

    def edit_segments(self) -> list[str]:
        """The active NameNode's finalized edit segments, oldest first."""
        nn = self._active()
        index = 0 if self.ha is None else [self.cluster.getNameNode(i) for i in range(2)].index(nn)
        name_dir = self.cluster.getNameDirs(index).iterator().next()  # a file: URI
        current = Path(str(name_dir.getPath())) / "current"
        return sorted(str(p) for p in current.glob("edits_0*-0*"))

    def failover(self, to: int) -> None:
        """Manual failover (no ZKFC here), as `hdfs haadmin -failover`: the other NameNode
        goes to standby first, then `to` becomes active."""
        other = 1 - to
        if self.cluster.getNameNode(other) is not None and self.cluster.isNameNodeUp(other):
            self.cluster.transitionToStandby(other)
        self.cluster.transitionToActive(to)

    def shutdown_namenode(self, index: int) -> None:
        self.cluster.shutdownNameNode(index)

    def restart_namenode(self, index: int, wait_active: bool = False) -> None:
        """Starts NameNode `index` again on its old ports (after shutdown_namenode, or from
        running): it loads the fsimage, replays the edits, and leaves safe mode once the
        DataNodes report; wait_active waits for that (MiniDFSCluster.waitActive)."""
        self.cluster.restartNameNode(index, wait_active)
        if self.ha is None:
            # MiniDFSCluster closed its FileSystem with the old NameNode ("Filesystem closed"
            # on the next call): the workload goes on through a new one.
            self.fs = self.cluster.getFileSystem()
            self.workload = Workload(self.fs, self.conf)


def main() -> None:
    address, base_dir = sys.argv[1], sys.argv[2]
    heap = sys.argv[3] if len(sys.argv) > 3 else "1g"
    authkey = bytes.fromhex(sys.stdin.readline().strip())
    log4j = (Path(__file__).parent / "log4j.properties").as_uri()
    # log4j.properties puts the NameNode's audit log under the base dir (${hdfs.kit.base_dir}).
    # HDFS_KIT_JAVA_OPTIONS: what a test session adds (tests/conftest.py: C1 only); `make
    # bench` runs its NameNodes without it.
    extra = os.environ.get("HDFS_KIT_JAVA_OPTIONS", "").split()
    jpype.startJVM(f"-Xmx{heap}", f"-Dlog4j.configuration={log4j}",
                   f"-Dhdfs.kit.base_dir={base_dir}", *JAVA17_OPENS, *extra, classpath=jars(),
                   convertStrings=True)
    host = Host()
    with Client(address, authkey=authkey) as conn:
        while True:
            try:
                method, args, kwargs = conn.recv()
            except EOFError:
                break
            try:
                result = getattr(host, method)(*args, **kwargs)
                conn.send(("ok", result))
            except Exception as exc:  # JPype raises Java exceptions as Python ones
                traceback.print_exc()
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
            if method == "stop":
                break
    host.stop()
    # Hadoop leaves non-daemon threads behind after shutdown; the process is done.
    os._exit(0)


if __name__ == "__main__":
    main()
