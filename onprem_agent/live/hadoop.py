"""The real Hadoop client, through JPype: HdfsAdmin for inotify, FileSystem for listings,
UserGroupInformation for Kerberos. Every call here is a Java call; nothing speaks HDFS's
protocol by hand.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hdfs_events.event import INodeType, perms_to_octal
from onprem_agent.live.snapshot import ListingPage, NamespaceEntry
from onprem_agent.live.stream import StreamSource

log = logging.getLogger(__name__)


class KerberosError(RuntimeError):
    """The agent cannot log in from its keytab; the message names the keytab and the cause."""


class NotSuperuserError(PermissionError):
    """The NameNode refused inotify: the agent's user is not an HDFS superuser."""


def java_error_line(exc: BaseException) -> str:
    """A Java exception as one line: its class's simple name and its message's first line.
    A RemoteException carries the NameNode's class name and, in its message, the NameNode's
    own stack trace: both are cut to the first line."""
    name = type(exc).__name__.rsplit(".", 1)[-1]
    get_class_name = getattr(exc, "getClassName", None)  # org.apache.hadoop.ipc.RemoteException
    if callable(get_class_name):
        name = str(get_class_name()).rsplit(".", 1)[-1]
    message = _message(exc).strip()
    first = message.splitlines()[0] if message else ""
    return f"{name}: {first}"[:300] if first else name


def _message(exc: BaseException) -> str:
    get_message = getattr(exc, "getMessage", None)  # a Java exception, through JPype
    return str((get_message() if callable(get_message) else str(exc)) or "")


def _is_superuser_refusal(exc: BaseException) -> bool:
    # The NameNode's FSPermissionChecker.checkSuperuserPrivilege: AccessControlException
    # "Access denied for user X. Superuser privilege is required", through the RPC as a
    # RemoteException of that class (DFSInotifyEventInputStream does not unwrap it).
    return "AccessControlException" in java_error_line(exc) and \
        "Superuser privilege is required" in _message(exc)


def not_superuser(uri: str, exc: BaseException) -> NotSuperuserError | None:
    """The NameNode's refusal of inotify (from opening the stream, or from a poll: a stream
    opened at a txid asks the NameNode only when it polls) as a NotSuperuserError; None for any
    other exception."""
    if isinstance(exc, NotSuperuserError):
        return exc
    if not _is_superuser_refusal(exc):
        return None
    import jpype

    user = jpype.JClass("org.apache.hadoop.security.UserGroupInformation"
                        ).getCurrentUser().getShortUserName()
    return NotSuperuserError(
        f"{uri} refused inotify to {user}, who is not an HDFS superuser "
        f"({java_error_line(exc)}) -> run the agent as a principal whose user is in "
        "dfs.permissions.superusergroup")


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
        with self._superuser_required():
            if after_txid is None:
                return self._admin.getInotifyEventStream()
            return self._admin.getInotifyEventStream(after_txid)

    def current_txid(self) -> int:
        # ClientProtocol.getCurrentEditLogTxid: the call HdfsAdmin makes for a stream opened
        # without a txid; it needs HDFS superuser, as inotify does.
        with self._superuser_required():
            return int(self._fs.getClient().getNamenode().getCurrentEditLogTxid())

    def roll_edits(self) -> int:
        """Closes the NameNode's in-progress edit segment and opens the next (what `hdfs
        dfsadmin -rollEdits` calls; HDFS superuser): returns the new segment's first txid."""
        with self._superuser_required():
            return int(self._fs.rollEdits())

    @contextlib.contextmanager
    def _superuser_required(self) -> Iterator[None]:
        try:
            yield
        except Exception as exc:  # JPype raises the Java exception; others pass through
            refusal = not_superuser(self.uri, exc)
            if refusal is None:
                raise
            raise refusal from None

    def stream_source(self) -> StreamSource:
        return StreamSource(open_stream=self.open_stream, current_txid=self.current_txid,
                            uri=self.uri, roll_edits=self.roll_edits)

    def lister(self) -> HadoopLister:
        return HadoopLister(self._fs)

    def file_system(self) -> Any:
        """The org.apache.hadoop.fs.FileSystem itself, for readers of file data (the sync)."""
        return self._fs

    def close(self) -> None:
        self._fs.close()


class HadoopLister:
    """The NameNode's listing, a page at a time, as NamespaceEntry objects (the NamespaceLister
    of snapshot.py)."""

    def __init__(self, fs: Any) -> None:
        import jpype

        self._fs = fs
        self._uri = fs.getUri()
        self._path = jpype.JClass("org.apache.hadoop.fs.Path")
        self._not_found = jpype.JClass("java.io.FileNotFoundException")
        self._bytes = jpype.JArray(jpype.JByte)
        self._empty = jpype.JClass("org.apache.hadoop.hdfs.protocol.HdfsFileStatus").EMPTY_NAME
        self.pages = 0  # listPaths calls answered (a test reads it)

    def status(self, path: str) -> NamespaceEntry | None:
        try:
            return entry_from_status(self._fs.getFileStatus(self._path(path)))
        except self._not_found:
            return None

    def list_page(self, path: str, after: str | None) -> ListingPage:
        # DFSClient.listPaths is the call FileSystem.listStatus loops over: one RPC returns up
        # to dfs.ls.limit (1000) children after the name given, in the NameNode's order, so a
        # huge directory is never held whole (listStatus gathers every page into one array).
        start = self._empty if after is None else self._bytes(after.encode("utf-8"))
        try:
            listing = self._fs.getClient().listPaths(path, start)
        except self._not_found:
            listing = None
        self.pages += 1
        if listing is None:  # null: gone meanwhile; its events come from the stream
            return ListingPage(())
        parent = self._path(path)
        # A path that became a file meanwhile lists as itself: not a child.
        entries = [e for e in (entry_from_status(s.makeQualified(self._uri, parent))
                               for s in listing.getPartialListing()) if e.path != path]
        return ListingPage(entries, more=bool(listing.hasMore()))


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
        erasure_coded=bool(s.isErasureCoded()) if kind is INodeType.FILE else None,
        encrypted=bool(s.isEncrypted()) if kind is INodeType.FILE else None,
        children_num=_children_num(s) if kind is INodeType.DIRECTORY else None)


def _children_num(s: Any) -> int | None:
    """HDFS's count of a directory's children, which the NameNode sends with every directory's
    status (HdfsFileStatus, the runtime class behind DistributedFileSystem's FileStatus);
    -1 is HdfsFileStatus's "not known" (WebHDFS's JSON without the key)."""
    count = int(s.getChildrenNum())
    return count if count >= 0 else None


class KerberosLogin:
    """loginUserFromKeytab once, then checkTGTAndReloginFromKeytab at most every
    `interval_s` (Hadoop renews only when 80% of the ticket's life has passed, and no more
    often than hadoop.kerberos.min.seconds.before.relogin, so calling it is cheap).

    Which KDC and realm: Java's krb5.conf (java.security.krb5.conf, which start_jvm sets from
    KRB5_CONFIG, else /etc/krb5.conf)."""

    def __init__(self, principal: str, keytab: Path, conf: Any, *, interval_s: int = 3600,
                 clock: Any = time.monotonic) -> None:
        import jpype

        _check_keytab(keytab)
        ugi = jpype.JClass("org.apache.hadoop.security.UserGroupInformation")
        conf.set("hadoop.security.authentication", "kerberos")
        ugi.setConfiguration(conf)
        try:
            ugi.loginUserFromKeytab(principal, str(keytab))
        except Exception as exc:  # JPype raises Hadoop's KerberosAuthException (an IOException)
            raise KerberosError(f"cannot log in as {principal} from keytab {keytab}: "
                                f"{_login_cause(exc)} -> check that the keytab holds the "
                                "principal's current key (klist -kt; a key rotated in the KDC "
                                "needs a new keytab) and the realm in krb5.conf") from None
        self.principal, self.keytab = principal, keytab
        self._ugi, self._interval, self._clock = ugi, interval_s, clock
        self._last = clock()
        self._lock = threading.Lock()
        self.ticket_end_ms = self._ticket_end_ms()
        log.info("kerberos: logged in as %s from keytab %s, ticket valid until %s", principal,
                 keytab, _utc(self.ticket_end_ms))

    def relogin_if_due(self) -> None:
        with self._lock:
            if self._clock() - self._last >= self._interval:
                self._relogin()

    def _relogin(self) -> None:
        self._ugi.getLoginUser().checkTGTAndReloginFromKeytab()
        self._last = self._clock()
        end = self._ticket_end_ms()
        if end != self.ticket_end_ms:
            log.info("kerberos: ticket renewed for %s from keytab %s, valid until %s",
                     self.principal, self.keytab, _utc(end))
            self.ticket_end_ms = end

    def _ticket_end_ms(self) -> int | None:
        """The login user's ticket-granting ticket's end time (epoch ms), None without one."""
        import jpype

        ticket = jpype.JClass("javax.security.auth.kerberos.KerberosTicket")
        # UGI keeps its Subject (where the tickets are) to itself; getSubject is not public.
        get_subject = self._ugi.class_.getDeclaredMethod("getSubject")
        get_subject.setAccessible(True)
        subject = get_subject.invoke(self._ugi.getLoginUser())
        for tgt in subject.getPrivateCredentials(ticket):
            if str(tgt.getServer().getName()).startswith("krbtgt/"):
                return int(tgt.getEndTime().getTime())
        return None

    def relogin_now(self) -> None:
        """Before reconnecting to a NameNode that was away: an outage may outlive the ticket
        (keep_fresh's interval may not have come round yet). Hadoop logs in again only when the
        ticket is in its last 20 % or gone, so this is cheap when it is not due. A failure is a
        KerberosError: not worth retrying, the agent ends (reconnect.py)."""
        with self._lock:
            try:
                self._relogin()
            except Exception as exc:  # JPype raises Hadoop's KerberosAuthException
                raise KerberosError(f"cannot log in again as {self.principal} from keytab "
                                    f"{self.keytab}: {_login_cause(exc)}") from None

    def keep_fresh(self, stop: threading.Event) -> threading.Thread:
        """A thread that relogs in while the agent runs: busy or idle, the ticket stays valid."""

        def loop() -> None:
            while not stop.wait(min(60, self._interval)):
                try:
                    self.relogin_if_due()
                except Exception as exc:  # JPype raises the Java exception; retried next time
                    log.error("kerberos: relogin as %s from keytab %s failed: %s",
                              self.principal, self.keytab, _login_cause(exc))

        thread = threading.Thread(target=loop, name="kerberos-relogin", daemon=True)
        thread.start()
        return thread


def _check_keytab(keytab: Path) -> None:
    """Reads the keytab's first byte: Hadoop's own message for a missing or unreadable keytab
    is a LoginException that does not name the file."""
    try:
        with keytab.open("rb") as f:
            version = f.read(1)
    except OSError as exc:
        raise KerberosError(f"keytab {keytab}: {exc.strerror} -> check [kerberos] keytab and "
                            "that the agent's user can read it") from None
    if version != b"\x05":  # MIT's keytab format starts with 0x05 (then version 0x01/0x02)
        raise KerberosError(f"keytab {keytab} is not a keytab (empty, or not in MIT keytab "
                            "format) -> export it again (ktadd / ipa-getkeytab)")


def _login_cause(exc: BaseException) -> str:
    """What the KDC or the keytab said: Hadoop's KerberosAuthException wraps the JAAS
    LoginException ("Integrity check on decrypted field failed (31) - PREAUTH_FAILED" for a key
    the KDC no longer has), whose own causes are the JDK's internals."""
    get_cause = getattr(exc, "getCause", None)
    cause = (get_cause() if callable(get_cause) else None) or exc
    line = java_error_line(cause)
    if "Unable to obtain password from user" in line:  # JAAS's words for "no such key"
        return f"{line} (the keytab holds no key for this principal)"
    return line


def _utc(epoch_ms: int | None) -> str:
    if epoch_ms is None:
        return "<no ticket>"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_ms / 1000))
