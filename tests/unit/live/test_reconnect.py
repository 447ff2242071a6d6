"""Riding through NameNode restarts: what is waited out and what ends the agent (on Hadoop's
real exception classes, as JPype raises them), the backoff, and the live source reopening the
stream after the last txid it yielded (the stream double of doubles.py behind a switch)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest

from onprem_agent.live.convert import JavaBatchConverter
from onprem_agent.live.reconnect import Backoff, is_retriable
from onprem_agent.live.stream import LiveSource, StreamSource
from tests.unit.live.doubles import NameNodeDouble, StreamDouble, unlink

C = "prod"
FAST = Backoff(initial_s=0.001, max_s=0.004)


def java(name: str, *args: Any) -> BaseException:
    import jpype

    return jpype.JClass(name)(*args)


def remote(server_class: str, message: str = "refused") -> BaseException:
    """What the client gets for a NameNode-side exception: a RemoteException naming it."""
    return java("org.apache.hadoop.ipc.RemoteException", server_class, message)


@pytest.fixture(scope="module")
def converter(inotify_messages) -> JavaBatchConverter:
    return JavaBatchConverter(C, inotify_messages)


@pytest.mark.parametrize("make", [
    lambda: java("java.net.ConnectException", "Call From edge to nn:8020 failed on connection "
                 "exception: java.net.ConnectException: Connection refused"),
    lambda: java("java.io.EOFException", "End of File Exception between local host and nn"),
    lambda: java("java.net.SocketTimeoutException", "60000 millis timeout"),
    lambda: java("java.io.IOException", "Failed on local exception",
                 java("java.io.IOException", "Connection reset by peer")),
    lambda: remote("org.apache.hadoop.ipc.StandbyException",
                   "Operation category READ is not supported in state standby"),
    lambda: remote("org.apache.hadoop.ipc.RetriableException", "NameNode still not started"),
    lambda: remote("org.apache.hadoop.hdfs.server.namenode.SafeModeException",
                   "Name node is in safe mode"),
    lambda: remote("org.apache.hadoop.hdfs.server.namenode."
                   "RedundantEditLogInputStream$PrematureEOFException",
                   "got premature end-of-file at txid 129; expected file to go up to 132"),
], ids=["refused", "eof", "timeout", "reset", "standby", "starting", "safemode",
        "segment-cut-short"])
def test_a_namenode_down_restarting_or_standing_by_is_waited_out(jvm, make):
    assert is_retriable(make())


@pytest.mark.parametrize("make", [
    lambda: remote("org.apache.hadoop.security.AccessControlException",
                   "Access denied for user alice. Superuser privilege is required"),
    lambda: java("org.apache.hadoop.security.KerberosAuthException", "login failure"),
    # A Kerberos failure met while connecting is still a Kerberos failure.
    lambda: java("java.io.IOException", "Connection refused while logging in",
                 java("org.apache.hadoop.security.KerberosAuthException", "login failure")),
    lambda: java("java.net.UnknownHostException", "nn.example.con"),  # a typo in [hdfs] uri
    lambda: java("java.lang.IllegalArgumentException", "Wrong FS"),
    lambda: ValueError("a bug of ours"),
], ids=["not-superuser", "kerberos", "kerberos-wrapped", "unknown-host", "bad-uri", "bug"])
def test_what_an_operator_must_fix_is_not_retried(jvm, make):
    assert not is_retriable(make())


def test_backoff_doubles_to_its_cap_with_jitter_in_the_upper_half():
    backoff = Backoff(initial_s=1, max_s=30)
    assert [backoff.delay(n, rand=lambda: 1.0) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert [backoff.delay(n, rand=lambda: 0.0) for n in (1, 3, 7)] == [0.5, 2, 15]
    assert backoff.delay(10_000, rand=lambda: 1.0) == 30  # no overflow after days down


class Switch:
    """The NameNode double behind a power switch: while off, every poll and every current-txid
    call raises what a stopped NameNode gives (ConnectException); opening a stream at a txid
    asks nothing (HdfsAdmin's stream is lazy), as in Hadoop."""

    def __init__(self, nn: NameNodeDouble,
                 on_refused: Callable[[], object] = lambda: None) -> None:
        self.nn, self.down = nn, False
        self.refused = 0
        self.on_refused = on_refused  # after each refusal (not a timer: a loaded machine's
        # first call can come later than any timer)

    def _check(self) -> None:
        if self.down:
            self.refused += 1
            self.on_refused()
            raise java("java.net.ConnectException", "Connection refused")

    def source(self) -> StreamSource:
        def current() -> int:
            self._check()
            return self.nn.last_txid

        return StreamSource(open_stream=self.open_stream, current_txid=current,
                            uri="hdfs://nn:8020")

    def open_stream(self, after: int) -> Any:
        switch, inner = self, self.nn.open_stream(after)

        class Stream:
            def poll(self, *timeout: Any) -> Any:
                switch._check()
                return inner.poll(*timeout)

            def getTxidsBehindEstimate(self) -> int:
                return inner.getTxidsBehindEstimate()

        return Stream()


def test_a_namenode_stopped_mid_stream_is_waited_for_and_read_on_after_the_last_txid(
        converter, caplog):
    nn = NameNodeDouble()
    switch = Switch(nn)
    for i in range(3):
        nn.log(unlink(f"/before/{i}"))
    stop = threading.Event()
    relogins: list[bool] = []
    source = LiveSource(switch.source(), converter, cluster=C, start_txid=0, stop=stop,
                        gap_policy="stop", poll_timeout_ms=10, backoff=FAST,
                        shipped=lambda: 2,
                        before_reconnect=lambda: relogins.append(
                            source.stats.namenode_unavailable))

    def outage() -> None:  # on the first idle poll: down, written to while down, back up
        switch.down = True
        for i in range(3):
            nn.log(unlink(f"/during/{i}"))
        threading.Timer(0.2, restart).start()

    def restart() -> None:
        switch.down = False
        nn.log(unlink("/after/0"))

    idles = iter([outage] + [lambda: None] * 1000)
    source._on_idle = lambda: next(idles)()
    got: list[int] = []
    with caplog.at_level(logging.WARNING, logger="onprem_agent.live.stream"):
        for batch in source:
            got.append(batch.txid)
            if batch.events[0].path == "/after/0":
                stop.set()
    assert got == list(range(1, 8))  # every txid once, in order, across the outage
    assert switch.refused >= 2 and relogins and all(relogins)  # unavailable while retrying
    assert not source.stats.namenode_unavailable and source.stats.outages == 1
    assert nn.opened[0] == 0 and set(nn.opened[1:]) == {3}  # reopened after the last read
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith("NameNode hdfs://nn:8020 unavailable for ") and
               "(ConnectException: Connection refused), retrying in 0 s; last txid shipped 2, "
               "reading resumes after txid 3" in line for line in lines), lines
    assert any(line.startswith("NameNode hdfs://nn:8020 available again after ")
               for line in lines), lines


def test_a_namenode_down_at_start_is_waited_for_from_the_current_txid(converter):
    nn = NameNodeDouble()
    nn.skip(5)
    switch = Switch(nn, on_refused=lambda: setattr(switch, "down", False))  # up for the retry
    switch.down = True
    stop = threading.Event()
    source = LiveSource(switch.source(), converter, cluster=C, start_txid=None, stop=stop,
                        gap_policy="stop", poll_timeout_ms=10, backoff=FAST,
                        on_idle=lambda: nn.last_txid == 5 and nn.log(unlink("/x")))
    got = []
    for batch in source:
        got.append(batch.txid)
        stop.set()
    assert got == [6]
    assert nn.opened == [5] and switch.refused >= 1


def test_stop_ends_the_wait_for_a_namenode_that_stays_down(converter):
    nn = NameNodeDouble()
    stop = threading.Event()
    switch = Switch(nn, on_refused=lambda: threading.Timer(0.3, stop.set).start())
    switch.down = True
    source = LiveSource(switch.source(), converter, cluster=C, start_txid=0, stop=stop,
                        gap_policy="stop", poll_timeout_ms=10,
                        backoff=Backoff(initial_s=60, max_s=60))
    assert list(source) == []  # back within the stop, not after the 30-60 s wait
    assert source.stats.namenode_unavailable and switch.refused == 1


def test_a_refusal_an_operator_must_fix_still_ends_the_source(converter):
    nn = NameNodeDouble()
    nn.log(unlink("/a"))

    class Refusing(StreamDouble):
        def poll(self, *timeout: Any) -> Any:
            raise remote("org.apache.hadoop.security.AccessControlException",
                         "Superuser privilege is required")

    source = LiveSource(StreamSource(open_stream=lambda after: Refusing(nn, after),
                                     current_txid=lambda: 0),
                        converter, cluster=C, start_txid=0, stop=threading.Event(),
                        gap_policy="stop", backoff=FAST)
    with pytest.raises(Exception, match="Superuser privilege is required"):
        list(source)
    assert not source.stats.namenode_unavailable
