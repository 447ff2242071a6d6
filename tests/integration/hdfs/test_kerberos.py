"""The agent against a Kerberos-secured NameNode and DataNode (MiniKdc, realm EXAMPLE.COM):
it logs in from a keytab (no password anywhere), renews its ticket, reads events and ships
them; a principal that is not an HDFS superuser, or a keytab that cannot log in, gets one line
that says what to fix, never a stack trace.

The agent runs as `hdfs-events-agent run/doctor` subprocesses, as on an edge node: its JVM
must start with the realm's krb5.conf (KRB5_CONFIG), and Kerberos logins are JVM-wide.
"""

from __future__ import annotations

import calendar
import itertools
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hdfs_events import lake_layout
from hdfs_events.event import EventType
from tests.integration.hdfs.conftest import CLUSTER, received_events
from tests.kit.hadoop.cluster import HdfsCluster, Kerberos
from tests.kit.live_agent import AGENT, AgentProcess, write_agent_config

# Tickets of a few seconds, so a test sees the agent renew its own (Hadoop's
# TestDFSInotifyEventInputStreamKerberized uses 5 s); the agent asks every second whether
# renewal is due, and Hadoop renews after 80% of the ticket's life: 3 s before its end at
# 15 s, room for a relogin through a MiniKdc on a loaded machine (at 10 s: 2 s, less the poll).
TICKET_S = 15
STACK_FRAME = re.compile(r"^\s+at [\w$.]+\(|^Traceback", re.MULTILINE)


@pytest.fixture(scope="module")
def secure_hdfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HdfsCluster]:
    # The agent may fetch the fsimage: the NameNode's image servlet serves, besides the
    # NameNodes themselves, only dfs.cluster.administrators (HttpServer2's admin ACL).
    with HdfsCluster.start(tmp_path_factory.mktemp("secure-hdfs"), kind="secure",
                           ticket_lifetime_s=TICKET_S,
                           conf={"dfs.cluster.administrators": "hdfs-events"}) as cluster:
        yield cluster


@pytest.fixture
def kerberos(secure_hdfs: HdfsCluster, monkeypatch: pytest.MonkeyPatch) -> Kerberos:
    """The realm's krb5.conf for the agent's JVM, the standard way (MIT's KRB5_CONFIG)."""
    assert secure_hdfs.kerberos is not None
    monkeypatch.setenv("KRB5_CONFIG", str(secure_hdfs.kerberos.krb5_conf))
    monkeypatch.setenv("PATH", f"{Path(AGENT).parent}:/usr/bin:/bin")  # no `hadoop` script
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("HADOOP_CLASSPATH", raising=False)
    return secure_hdfs.kerberos


def config_as(tmp_path: Path, hdfs: HdfsCluster, queue: str, principal: str, keytab: Path,
              checkpoint_txid: int | None = None) -> Path:
    return write_agent_config(
        tmp_path / "agent", cluster=CLUSTER, queue_url=queue, uri=hdfs.uri,
        conf_dir=hdfs.conf_dir, checkpoint_txid=checkpoint_txid,
        extra=f'[kerberos]\nprincipal = "{principal}"\nkeytab = "{keytab}"\n'
              'relogin_interval_s = 1\n')


def agents(*calls: tuple[str, Path]) -> list[subprocess.CompletedProcess[str]]:
    """`hdfs-events-agent COMMAND --config CONFIG` for each call, side by side (each process
    its own JVM), as they finish."""
    started = [subprocess.Popen([str(AGENT), command, "--config", str(config)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ))
               for command, config in calls]
    done = []
    for process in started:
        out, err = process.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return done


def one_line_about(text: str, needle: str) -> str:
    """The only line of `text` that contains `needle`, with no stack trace anywhere."""
    assert not STACK_FRAME.search(text), text
    lines = [line for line in text.splitlines() if needle in line]
    assert len(lines) == 1, text
    return lines[0]


def test_agent_logs_in_from_its_keytab_renews_its_ticket_and_ships_events(
        tmp_path, secure_hdfs, kerberos, queue):
    config = config_as(tmp_path, secure_hdfs, queue, kerberos.principals["hdfs-events"],
                       kerberos.keytabs["hdfs-events"], checkpoint_txid=secure_hdfs.txid())
    assert "password" not in config.read_text()
    process = AgentProcess.start(config)
    try:
        secure_hdfs.run([["mkdirs", "/krb"], ["write", "/krb/before", "x"]])
        process.wait_for_checkpoint(secure_hdfs.txid())
        # Past the first ticket's end, with at least two renewals on the way.
        deadline = time.monotonic() + 6 * TICKET_S
        while len(tickets(process.log)) < 3 or time.time() < tickets(process.log)[0][1] + 1:
            assert process.process.poll() is None, process.log_tail()
            assert time.monotonic() < deadline, process.log_tail()
            time.sleep(0.5)
        secure_hdfs.run([["write", "/krb/after", "y"]])
        process.wait_for_checkpoint(secure_hdfs.txid())
    finally:
        assert process.stop() == 0, process.log_tail()
    assert "kerberos: relogin as" not in process.log.read_text()  # the renewal's error line
    logged = tickets(process.log)
    # Each renewal came while the ticket before it was still valid, and brought a later end.
    for (_, end), (renewed_at, next_end) in itertools.pairwise(logged):
        assert renewed_at < end < next_end, logged
    shipped = {(e.type, e.path) for e in received_events(queue)}
    for path in ("/krb/before", "/krb/after"):
        assert {(EventType.CREATE, path), (EventType.CLOSE, path)} <= shipped, shipped


def tickets(log: Path) -> list[tuple[float, float]]:
    """(when, until): for the login's ticket and each renewal the agent logged, the time of
    the log line and the ticket's end, in epoch seconds."""
    found = re.findall(r"^(\S+ \S+),\d+ INFO \S+: kerberos: (?:logged in|ticket renewed) "
                       r".*valid until (\S+)Z$", log.read_text(), re.MULTILINE)
    return [(time.mktime(time.strptime(when, "%Y-%m-%d %H:%M:%S")),
             calendar.timegm(time.strptime(until, "%Y-%m-%dT%H:%M:%S"))) for when, until in found]


def test_a_principal_that_is_not_a_superuser_gets_one_line_from_doctor_and_run(
        tmp_path, secure_hdfs, kerberos, queue):
    config = config_as(tmp_path / "alice", secure_hdfs, queue, kerberos.principals["alice"],
                       kerberos.keytabs["alice"])
    superuser = config_as(tmp_path / "agent", secure_hdfs, queue,
                          kerberos.principals["hdfs-events"], kerberos.keytabs["hdfs-events"])
    # `run` with a checkpoint opens the stream at its txid and meets the refusal at the first
    # poll; without one it meets it asking for the current txid.
    resuming = config_as(tmp_path / "resuming", secure_hdfs, queue, kerberos.principals["alice"],
                         kerberos.keytabs["alice"], checkpoint_txid=secure_hdfs.txid())
    doctor, passing, *runs = agents(("doctor", config), ("doctor", superuser), ("run", config),
                                    ("run", resuming))
    assert passing.returncode == 0, passing.stdout + passing.stderr  # every check OK
    assert re.search(r"^OK\s+superuser\s+inotify stream opened", passing.stdout, re.MULTILINE)
    assert doctor.returncode == 1
    assert re.search(r"^OK\s+kerberos\s+logged in as alice/localhost@EXAMPLE.COM",
                     doctor.stdout, re.MULTILINE), doctor.stdout
    line = one_line_about(doctor.stdout + doctor.stderr, "superuser")
    assert line.startswith("FAIL superuser")
    assert "alice, who is not an HDFS superuser" in line
    assert "Superuser privilege is required" in line
    assert "dfs.permissions.superusergroup" in line

    for run in runs:
        assert run.returncode == 1
        line = one_line_about(run.stderr, "superuser")
        assert line.startswith("hdfs-events-agent run: ")
        assert "alice, who is not an HDFS superuser" in line


@pytest.mark.parametrize("case", ["missing", "not a keytab", "stale after a key rotation"])
def test_a_keytab_that_cannot_log_in_is_named_by_doctor_and_run(
        tmp_path, secure_hdfs, kerberos, queue, case):
    keytab = tmp_path / "bob.keytab"
    if case == "not a keytab":
        keytab.write_text("principal=bob\n")
        keytab.chmod(0o600)
    elif case == "stale after a key rotation":
        keytab.write_bytes(kerberos.keytabs["bob"].read_bytes())
        keytab.chmod(0o600)
        secure_hdfs.rotate_key("bob")
    config = config_as(tmp_path, secure_hdfs, queue, kerberos.principals["bob"], keytab)

    doctor, run = agents(("doctor", config), ("run", config))
    assert doctor.returncode == 1
    line = one_line_about(doctor.stdout + doctor.stderr, str(keytab))
    assert line.startswith("FAIL kerberos")
    assert run.returncode == 1
    line = one_line_about(run.stderr, str(keytab))
    assert line.startswith("hdfs-events-agent run: ")
    if case == "stale after a key rotation":  # the KDC's own words, not the JDK's internals
        assert "cannot log in as bob/localhost@EXAMPLE.COM" in line
        assert "PREAUTH_FAILED" in line


def test_a_namenode_away_longer_than_a_ticket_is_reconnected_with_a_fresh_login(
        tmp_path, secure_hdfs, kerberos, queue):
    """The agent's timed renewal is an hour away; the NameNode is stopped for more than a
    ticket's life. Before each reconnect the agent logs in again from its keytab
    (KerberosLogin.relogin_now) and reads on from the restarted NameNode, never exiting.

    Last in the module: the kit's DataNode does not renew its own ticket, so it cannot register
    with the restarted NameNode (no more writes; inotify reads work in safe mode)."""
    config = write_agent_config(
        tmp_path / "agent", cluster=CLUSTER, queue_url=queue, uri=secure_hdfs.uri,
        conf_dir=secure_hdfs.conf_dir, checkpoint_txid=secure_hdfs.txid(),
        hdfs_extra="reconnect_max_s = 2\n",
        extra=f'[kerberos]\nprincipal = "{kerberos.principals["hdfs-events"]}"\n'
              f'keytab = "{kerberos.keytabs["hdfs-events"]}"\nrelogin_interval_s = 3600\n')
    process = AgentProcess.start(config)
    try:
        secure_hdfs.run([["mkdirs", "/krb-outage"], ["write", "/krb-outage/before", "x"]])
        process.wait_for_checkpoint(secure_hdfs.txid())
        secure_hdfs.shutdown_namenode(0)
        time.sleep(1.5 * TICKET_S)
        secure_hdfs.restart_namenode(0)
        deadline = time.monotonic() + 120
        while "available again after" not in process.log.read_text():
            assert process.process.poll() is None, process.log_tail()
            assert time.monotonic() < deadline, process.log_tail()
            time.sleep(0.5)
        time.sleep(1)  # a few polls of the new NameNode, through its Kerberos SASL handshake
        assert process.process.poll() is None, process.log_tail()
    finally:
        assert process.stop() == 0, process.log_tail()
    log = process.log.read_text()
    outage = log[log.index("unavailable for "):log.index("available again after")]
    # No timed renewal can come in an hour: each one here was the reconnect's, and the outage
    # outlived the login's ticket.
    renewals = re.findall(r"kerberos: ticket renewed for hdfs-events/", outage)
    assert len(renewals) >= 1, log
    assert "Kerberos" not in log.split("available again after")[1], log  # no SASL failure


def test_fetch_image_over_spnego_as_an_administrator_and_one_line_for_others(
        tmp_path, secure_hdfs, kerberos, moto_endpoint):
    import boto3

    from tests.kit.hadoop.jars import LIB

    boto3.client("s3").create_bucket(
        Bucket="lake", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    # Whatever image the NameNode has (one exists from the format on): a test before this one
    # may have left it restarting in safe mode, where an image is still served.
    configs = {}
    for user in ("hdfs-events", "alice"):
        configs[user] = write_agent_config(
            tmp_path / user, cluster=CLUSTER, queue_url="https://q/unused.fifo",
            uri=secure_hdfs.uri, conf_dir=secure_hdfs.conf_dir,
            # DFSAdmin is in hadoop-hdfs (the kit's minicluster jar), not in pyspark's jars
            hdfs_extra=f'classpath = ["{LIB}/*"]\n',
            extra=f'[kerberos]\nprincipal = "{kerberos.principals[user]}"\n'
                  f'keytab = "{kerberos.keytabs[user]}"\n[fsimage]\nbucket = "lake"\n')
    admin, other = agents(("fetch-image", configs["hdfs-events"]),
                          ("fetch-image", configs["alice"]))

    assert admin.returncode == 0, admin.stderr[-3000:]
    key = admin.stdout.strip().rsplit("s3://lake/", 1)[1]
    assert key.startswith(lake_layout.fsimage_cluster_prefix(CLUSTER)), admin.stdout
    assert boto3.client("s3").get_object(Bucket="lake", Key=key)["Body"].read(8) == b"HDFSIMG1"
    assert other.returncode == 1
    line = one_line_about(other.stderr, "hdfs-events-agent fetch-image:")
    assert "status code 403" in line and "dfs.cluster.administrators" in line, line
