"""The real Hadoop client, through JPype: HdfsAdmin for inotify, FileSystem for listings,
UserGroupInformation for Kerberos. Every call here is a Java call; nothing speaks HDFS's
protocol by hand.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hdfs_events.event import INodeType, perms_to_octal
from onprem_agent.live.snapshot import NamespaceEntry
from onprem_agent.live.stream import StreamSource

log = logging.getLogger(__name__)


def hadoop_configuration(overrides: dict[str, str] | None = None) -> Any:
    """A Configuration with the *-site.xml found on the classpath (HADOOP_CONF_DIR first)."""
    import jpype

    conf = jpype.JClass("org.apache.hadoop.conf.Configuration")()
    for key, value in (overrides or {}).items():
        conf.set(key, value)
    return conf


class HadoopClient:
    def __init__(self, uri: str, conf: Any | None = None) -> None:
        import jpype

        self.uri = uri
        self.conf = conf if conf is not None else hadoop_configuration()
        java_uri = jpype.JClass("java.net.URI").create(uri)
        self._admin = jpype.JClass("org.apache.hadoop.hdfs.client.HdfsAdmin")(java_uri,
                                                                              self.conf)
        self._fs = jpype.JClass("org.apache.hadoop.fs.FileSystem").get(java_uri, self.conf)
        self._path = jpype.JClass("org.apache.hadoop.fs.Path")
        self._not_found = jpype.JClass("java.io.FileNotFoundException")

    def open_stream(self, after_txid: int | None) -> Any:
        """Events with txid > after_txid; None: from the NameNode's current txid."""
        if after_txid is None:
            return self._admin.getInotifyEventStream()
        return self._admin.getInotifyEventStream(after_txid)

    def current_txid(self) -> int:
        # ClientProtocol.getCurrentEditLogTxid: the call HdfsAdmin makes for a stream opened
        # without a txid; it needs HDFS superuser, as inotify does.
        return int(self._fs.getClient().getNamenode().getCurrentEditLogTxid())

    def stream_source(self) -> StreamSource:
        return StreamSource(open_stream=self.open_stream, current_txid=self.current_txid)

    def lister(self) -> HadoopLister:
        return HadoopLister(self._fs)

    def file_system(self) -> Any:
        """The org.apache.hadoop.fs.FileSystem itself, for readers of file data (the sync)."""
        return self._fs

    def close(self) -> None:
        self._fs.close()


class HadoopLister:
    """FileSystem.listStatus as NamespaceEntry objects (the NamespaceLister of snapshot.py)."""

    def __init__(self, fs: Any) -> None:
        import jpype

        self._fs = fs
        self._path = jpype.JClass("org.apache.hadoop.fs.Path")
        self._not_found = jpype.JClass("java.io.FileNotFoundException")

    def status(self, path: str) -> NamespaceEntry | None:
        try:
            return entry_from_status(self._fs.getFileStatus(self._path(path)))
        except self._not_found:
            return None

    def list_dir(self, path: str) -> Sequence[NamespaceEntry]:
        try:
            return [entry_from_status(s) for s in self._fs.listStatus(self._path(path))]
        except self._not_found:
            return []  # deleted while the walk ran: its events come from the stream


def entry_from_status(s: Any) -> NamespaceEntry:
    if s.isDirectory():
        kind = INodeType.DIRECTORY
    elif s.isSymlink():
        kind = INodeType.SYMLINK
    else:
        kind = INodeType.FILE
    return NamespaceEntry(
        path=str(s.getPath().toUri().getPath()), inode_type=kind, size=int(s.getLen()),
        mtime=int(s.getModificationTime()), atime=int(s.getAccessTime()),
        owner=str(s.getOwner()), group=str(s.getGroup()),
        perms=perms_to_octal(int(s.getPermission().toShort())),
        replication=int(s.getReplication()), block_size=int(s.getBlockSize()),
        symlink_target=str(s.getSymlink().toUri().getPath()) if kind is INodeType.SYMLINK
        else None,
        erasure_coded=bool(s.isErasureCoded()) if kind is INodeType.FILE else None)


class KerberosLogin:
    """loginUserFromKeytab once, then checkTGTAndReloginFromKeytab at most every
    `interval_s` (Hadoop renews only when the ticket is near its end, so calling it is cheap)."""

    def __init__(self, principal: str, keytab: Path, conf: Any, *, interval_s: int = 3600,
                 clock: Any = time.monotonic) -> None:
        import jpype

        ugi = jpype.JClass("org.apache.hadoop.security.UserGroupInformation")
        conf.set("hadoop.security.authentication", "kerberos")
        ugi.setConfiguration(conf)
        ugi.loginUserFromKeytab(principal, str(keytab))
        self._ugi, self._interval, self._clock = ugi, interval_s, clock
        self._last = clock()
        self._lock = threading.Lock()
        log.info("kerberos: logged in as %s from keytab %s", principal, keytab)

    def relogin_if_due(self) -> None:
        with self._lock:
            if self._clock() - self._last < self._interval:
                return
            self._ugi.getLoginUser().checkTGTAndReloginFromKeytab()
            self._last = self._clock()

    def keep_fresh(self, stop: threading.Event) -> threading.Thread:
        """A thread that relogs in while the agent runs: busy or idle, the ticket stays valid."""

        def loop() -> None:
            while not stop.wait(min(60, self._interval)):
                try:
                    self.relogin_if_due()
                except Exception as exc:  # JPype raises the Java exception; retried next time
                    log.error("kerberos: relogin failed: %s", exc)

        thread = threading.Thread(target=loop, name="kerberos-relogin", daemon=True)
        thread.start()
        return thread
