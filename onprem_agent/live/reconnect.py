"""Riding through NameNode restarts: which failures are worth waiting out, how long to wait
between attempts, and the one line that says what is going on.

A NameNode restart (non-HA: stop, start, load the fsimage, replay edits, leave safe mode) or an
HA failover is routine: the agent must not exit on it (systemd would restart it every few
seconds with a fresh JVM and Kerberos login while the NameNode is still loading, and someone is
paged for nothing). The live source (stream.py) waits and reopens the inotify stream after the
last txid it handed to the pipeline, so nothing is lost and nothing is read twice.

What is not worth waiting out ends the agent as before (exit 1, one line on stderr): a refused
superuser check, a failed Kerberos login, a bad URI. Waiting would only hide them; the
`NameNodeUnavailable` metric and its alarm cover the long outage.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# Where each retriable failure comes from (simple Java class names, so a RemoteException's
# server-side class matches too):
_RETRIABLE = frozenset({
    # The NameNode's RPC port is closed: process stopped or not yet listening (at once, measured
    # against a stopped MiniDFSCluster NameNode; an HA client first tries the other NameNode).
    "ConnectException",
    # The NameNode closed the connection mid-call: what a poll in flight gets as it stops.
    "EOFException",
    # Connection reset, no route for a moment, a timeout while it is busy loading.
    "SocketException", "SocketTimeoutException", "NoRouteToHostException",
    "ConnectTimeoutException",  # org.apache.hadoop.net: Hadoop's own connect timeout
    # HA: the NameNode answering is the standby (both are, in the middle of a failover; the
    # client's failover proxy retries first and gives up after dfs.client.failover.max.attempts).
    "StandbyException",
    # NameNodeRpcServer.checkNNStartup: "NameNode still not started" while the fsimage loads.
    "RetriableException",
    # Startup safe mode (until enough blocks are reported); inotify reads are allowed in it,
    # but listing-related calls around it may still meet it.
    "SafeModeException",
    # Just after a restart, the NameNode serving inotify from its edit log files can meet a
    # segment that ends before the txid its name or header promises (RedundantEditLogInputStream:
    # "got premature end-of-file at txid 129; expected file to go up to 132"), seen in the kit's
    # restart test under load; read again a moment later, the segment is whole.
    "PrematureEOFException",
})
# A plain IOException that wraps a broken socket (NetUtils.wrapException keeps the class of
# what it wraps only for the classes it knows, so these arrive as java.io.IOException).
_RETRIABLE_MESSAGES = ("Connection reset by peer", "Broken pipe", "Connection refused")
# Never retried, whatever they wrap: an operator must act (AccessControlException: not an HDFS
# superuser; KerberosAuthException / LoginException: the keytab or the KDC refused the login).
_FATAL = frozenset({"AccessControlException", "KerberosAuthException", "LoginException",
                    "NotSuperuserError", "KerberosError"})
_MAX_CAUSES = 8  # a Java cause chain is short; a cycle must not loop forever


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(seen) < _MAX_CAUSES and all(current is not s for s in seen):
        seen.append(current)
        yield current
        get_cause = getattr(current, "getCause", None)  # a Java exception, through JPype
        current = get_cause() if callable(get_cause) else current.__cause__


def _simple_name(java_name: str) -> str:
    """`a.b.Outer$Inner` -> `Inner`: a nested class is named by its own name."""
    return java_name.rsplit(".", 1)[-1].rsplit("$", 1)[-1]


def _class_names(exc: BaseException) -> list[str]:
    names = [_simple_name(type(exc).__name__)]
    get_class_name = getattr(exc, "getClassName", None)  # org.apache.hadoop.ipc.RemoteException
    if callable(get_class_name):
        names.append(_simple_name(str(get_class_name())))
    return names


def is_retriable(exc: BaseException) -> bool:
    """True for a NameNode that is down, restarting, loading or standing by (see _RETRIABLE);
    False for anything an operator must fix and for what we do not know (exit as before: an
    unknown failure retried forever would hide a bug)."""
    retriable = False
    for cause in _causes(exc):
        names = _class_names(cause)
        if any(n in _FATAL for n in names):
            return False
        get_message = getattr(cause, "getMessage", None)
        message = str((get_message() if callable(get_message) else str(cause)) or "")
        if any(n in _RETRIABLE for n in names) or any(m in message
                                                      for m in _RETRIABLE_MESSAGES):
            retriable = True
    return retriable


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential from `initial_s`, capped at `max_s`, with jitter: each delay is drawn from
    [d/2, d] so agents of many clusters (or the two of an HA pair) do not knock in step on a
    NameNode that is just coming up."""

    initial_s: float = 1.0
    max_s: float = 30.0

    def delay(self, attempt: int, rand: Callable[[], float] = random.random) -> float:
        """The wait before attempt `attempt` + 1 (attempt counts failures, from 1)."""
        ceiling = min(self.max_s, self.initial_s * 2 ** min(attempt - 1, 30))
        return ceiling / 2 + rand() * ceiling / 2


@dataclass(slots=True)
class Outage:
    """One spell of NameNode unavailability, as the live source's thread sees it."""

    started_s: float  # monotonic
    error: str  # the last failure, one line
    attempts: int = 1

    def describe(self, uri: str, now_s: float, retry_in_s: float, resume_after: int | None,
                 shipped: int | None) -> str:
        where = "the current txid" if resume_after is None else f"txid {resume_after}"
        return (f"NameNode {uri} unavailable for {now_s - self.started_s:.0f} s ({self.error}), "
                f"retrying in {retry_in_s:.0f} s; last txid shipped "
                f"{'<none>' if shipped is None else shipped}, reading resumes after {where}")
