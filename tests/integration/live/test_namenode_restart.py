"""A NameNode restart, ridden through (issue #30): `hdfs-events-agent run` as its own process
reads a real NameNode (MiniDFSCluster, non-HA); half a generated client workload in, the NameNode
is stopped for 60 s, started again (fsimage and edits loaded, safe mode left), and the second
half runs. The agent process never exits; it says what is going on in one log line per retry,
its NameNodeUnavailable heartbeat goes to 1 and back to 0, and the lake holds every event
Hadoop's own Java reader sees over the whole txid range, once each, field for field.

~2 minutes, most of it the 60 s outage the issue asks for.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from hdfs_events import names
from tests.integration.hdfs.conftest import (
    CLUSTER,
    consume,
    java_rows,
    raw_lake_events,
)
from tests.kit.client_workload import HDFS_CONF, client_workload, run_calls
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.live_agent import AgentProcess, write_agent_config

OUTAGE_S = 60  # the must-show
# The shortest waits the config allows: the agent notices the NameNode is back within one
# attempt (Hadoop's own 10 x 1 s connect retries) plus 4 s, not the default cap of 30 s.
RECONNECT = "reconnect_initial_s = 1\nreconnect_max_s = 4\n"
DEADLINE_S = 120.0  # generous: only a hang fails it, never a slow machine
RETRY_LINE = re.compile(
    r"NameNode hdfs://localhost:\d+ unavailable for (\d+) s \((\w+): [^)]*\), retrying in "
    r"\d+ s; last txid shipped (\d+|<none>), reading resumes after txid (\d+)")


@pytest.fixture(scope="module")
def hdfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HdfsCluster]:
    with HdfsCluster.start(tmp_path_factory.mktemp("restart"), conf=HDFS_CONF) as cluster:
        yield cluster


def wait_for(condition: Callable[[], bool], what: str, agent: AgentProcess) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert agent.process.poll() is None, (
            f"the agent exited {agent.process.returncode}: {agent.log_tail()}")
        assert time.monotonic() < deadline, f"gave up waiting for {what}: {agent.log_tail()}"
        time.sleep(0.2)


def namenode_unavailable(since: datetime) -> list[float]:
    """NameNodeUnavailable as the agent's heartbeats put it in CloudWatch, second by second,
    equal neighbours merged: [0, 1, 0] is one outage, seen and over."""
    points = boto3.client("cloudwatch").get_metric_statistics(
        Namespace=names.METRICS_NAMESPACE, MetricName=names.METRIC_NAMENODE_UNAVAILABLE,
        Dimensions=[{"Name": names.DIMENSION_CLUSTER, "Value": CLUSTER}],
        StartTime=since, EndTime=datetime.now(UTC) + timedelta(seconds=5), Period=1,
        Statistics=["Maximum"])["Datapoints"]
    runs: list[float] = []
    for point in sorted(points, key=lambda p: p["Timestamp"]):
        if not runs or runs[-1] != point["Maximum"]:
            runs.append(point["Maximum"])
    return runs


def test_namenode_stopped_60_s_mid_workload_agent_never_exits_and_lake_equals_hadoop(
        hdfs, queue, index_table, tmp_path):
    work = client_workload(ops=240, seed=30)
    half = len(work.ops) // 2
    start = hdfs.txid()
    config = write_agent_config(
        tmp_path / "agent", cluster=CLUSTER, queue_url=queue, uri=hdfs.uri,
        conf_dir=hdfs.conf_dir, checkpoint_txid=start, hdfs_extra=RECONNECT,
        heartbeat_interval_s=1)
    began = datetime.now(UTC)
    agent = AgentProcess.start(config)
    try:
        wait_for(lambda: namenode_unavailable(began) == [0.0], "the first heartbeat", agent)
        run_calls(hdfs, work.ops[:half])
        before_outage = hdfs.txid()
        # Mid-workload: the agent may still be reading or sending the first half.
        hdfs.shutdown_namenode(0)
        down = time.monotonic()
        wait_for(lambda: namenode_unavailable(began) == [0.0, 1.0],
                 "NameNodeUnavailable = 1", agent)
        while time.monotonic() - down < OUTAGE_S:
            assert agent.process.poll() is None, agent.log_tail()
            time.sleep(0.5)
        hdfs.restart_namenode(0, wait_active=True)
        run_calls(hdfs, work.ops[half:])
        end = hdfs.txid()
        agent.wait_for_checkpoint(end, timeout_s=DEADLINE_S)
        wait_for(lambda: namenode_unavailable(began) == [0.0, 1.0, 0.0],
                 "NameNodeUnavailable back to 0", agent)
        assert agent.process.poll() is None  # the same process throughout
    finally:
        assert agent.stop() == 0, agent.log_tail()

    log = agent.log.read_text()
    assert log.count(f"shipping cluster {CLUSTER} from txid") == 1, log  # one term, no restart
    retries = [m for m in RETRY_LINE.finditer(log)]
    assert retries, agent.log_tail()
    assert {m.group(2) for m in retries} <= {"ConnectException", "EOFException",
                                             "RetriableException", "SafeModeException"}
    # Each line says how long so far: the last one is most of the 60 s (the first failure
    # comes after Hadoop's own connect retries).
    assert int(retries[-1].group(1)) >= OUTAGE_S - 20, retries[-1].group(0)
    assert {int(m.group(4)) for m in retries} <= set(range(start, before_outage + 1))
    assert re.search(r"NameNode hdfs://\S+ available again after \d+ s \(\d+ failed attempts\)",
                     log)

    java = java_rows(hdfs.java_events(start, end))
    assert any(row["txid"] <= before_outage for row in java)
    assert any(row["txid"] > before_outage for row in java)  # written after the restart
    consume(queue, ["/"])
    lake = raw_lake_events()
    counts = Counter(e.key for e in lake)
    assert [k for k, n in counts.items() if n > 1] == []  # nothing shipped twice
    rows = sorted((e.to_dict() for e in lake), key=lambda r: (r["txid"], r["index"]))
    assert rows == java  # nothing lost, field for field
