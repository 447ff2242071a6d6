"""HA for real: two NameNodes behind one nameservice (MiniDFSCluster's simpleHATopology: a shared
edits directory, the client conf naming both NameNodes and ConfiguredFailoverProxyProvider), and
agents that reach it as on an edge node: `hdfs-events-agent run`, processes of their own, `[hdfs]
uri` the nameservice and `conf_dir` the client configuration.

- A failover while the agent reads, and one while it is down (its restart meets the standby
  first): every event Hadoop's own reader sees reaches the consumer, the raw lake holds each
  once, field for field, and `verify` finds the index equal to the namespace.
- Two agent processes share the DynamoDB lease and checkpoint and one FIFO queue. The leader is
  killed with SIGKILL while a client writes; the standby takes over once the lease has run out,
  every event arrives, and only events above the checkpoint it took over from arrive twice.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator

import boto3
import pytest

from hdfs_events.event import HdfsEvent
from hdfs_events.ids import message_group_id
from hdfs_events.names import STATE_ITEM_LEASE, STATE_PK, STATE_SK
from onprem_agent.checkpoint import DynamoCheckpointStore
from tests.integration.agent.conftest import (
    Drainer,
    check_delivery,
    event_keys_by_message,
    manifests,
)
from tests.integration.hdfs.conftest import (
    CLUSTER,
    consume,
    java_rows,
    raw_lake_events,
)
from tests.integration.live.conftest import STATE_TABLE
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.live_agent import AgentProcess, write_agent_config
from tests.unit.agent.chain import check_covered

# The shortest lease the config accepts (duration_s >= 5, renew_interval_s <= half of it): the
# standby waits seconds for a dead leader's lease to run out, not the default 30.
LEASE = "[lease]\nduration_s = 5\nrenew_interval_s = 1\n"
DEADLINE_S = 120.0  # generous: only a hang fails it, never a slow machine


@pytest.fixture(scope="module")
def ha(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HdfsCluster]:
    with HdfsCluster.start(tmp_path_factory.mktemp("ha"), kind="ha") as cluster:
        yield cluster


def changes(root: str, name: str) -> list[list]:
    """A few events of several types under root/name; the last op is a METADATA event, so the
    NameNode's last txid is then the txid of an event."""
    d = f"{root}/{name}"
    return [["mkdirs", d], ["write", f"{d}/f", name], ["rename", f"{d}/f", f"{d}/g"],
            ["setxattr", f"{d}/g", "user.step", name], ["chmod", d, "0750"]]


def run_to_event(hdfs: HdfsCluster, ops: list[list]) -> int:
    """Runs ops, the last of which makes one event, and returns a txid the agent's checkpoint
    reaches once that event is acknowledged: the one after the NameNode's last txid before
    it. Not the NameNode's last txid after it: an edit log roll (the agent's own, every
    roll_edits_every_txids; in production also the standby's, every dfs.ha.log-roll.period,
    which MiniDFSCluster turns off) may come between the op and that read, and its
    END_LOG_SEGMENT and START_LOG_SEGMENT txids carry no event, so the checkpoint, which rests
    on events' txids, never reaches them (CI: "checkpoint 51 never
    reached 52", END_LOG_SEGMENT read before its START_LOG_SEGMENT was written)."""
    hdfs.run(ops[:-1])
    before = hdfs.txid()
    hdfs.run(ops[-1:])
    return before + 1


def wait_for(condition: Callable[[], bool], what: str, *agents: AgentProcess) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        for agent in agents:
            assert agent.process.poll() is None, (
                f"the agent exited {agent.process.returncode}: {agent.log_tail()}")
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def test_failovers_while_reading_and_while_down_lose_and_repeat_nothing(
        ha, queue, index_table, tmp_path):
    root = "/ha-failover"
    ha.run([["mkdirs", root]])
    start = ha.txid()
    # The agent rolls the active's edit log every 10 txids it reads (as every 50,000 in
    # production, onprem_agent/live/stream.py), through the failover proxy: also while the
    # NameNodes swap roles below.
    config = write_agent_config(
        tmp_path / "agent", cluster=CLUSTER, queue_url=queue, uri=ha.uri,
        conf_dir=ha.conf_dir, checkpoint_txid=start,
        inotify_extra="roll_edits_every_txids = 10\n")
    segments = len(ha.edit_segments())
    agent = AgentProcess.start(config)
    try:
        for step in range(6):  # a drain each: every roll check sees the txids read so far
            agent.wait_for_checkpoint(run_to_event(ha, changes(root, f"before-{step}")))
    finally:
        assert agent.stop() == 0, agent.log_tail()
    # ~70 txids read: the agent's rolls (MiniDFSCluster turns the standby's own off).
    assert len(ha.edit_segments()) - segments >= 4

    # While the agent is down: edits on NameNode 0, a failover, edits on NameNode 1. The
    # client conf lists NameNode 0 first, so the restarted agent meets the standby first.
    ha.run(changes(root, "down-on-0"))
    ha.failover(1)
    ha.run(changes(root, "down-on-1"))

    agent = AgentProcess.start(config)
    try:
        # The agent reads NameNode 1's edits first, so the failover below comes while it is
        # streaming (its start, JVM included, takes longer than a failover).
        agent.wait_for_checkpoint(run_to_event(ha, changes(root, "live-on-1")))
        ha.failover(0)  # while the agent reads
        agent.wait_for_checkpoint(run_to_event(ha, changes(root, "live-on-0")))
    finally:
        assert agent.stop() == 0, agent.log_tail()
    # The last event's txid, not the NameNode's last: Hadoop's reader (java_events) reads until
    # it has read `end`, and a roll after the last event would leave it nothing to read.
    end = agent.checkpoint()
    assert end is not None

    java = java_rows(ha.java_events(start, end))
    assert {row["path"] for row in java} >= {
        f"{root}/{name}" for name in ("before-0", "before-5", "down-on-0", "down-on-1", "live-on-1",
                                      "live-on-0")}
    consume(queue, [root])
    lake = raw_lake_events()
    counts = Counter(e.key for e in lake)
    assert [k for k, n in counts.items() if n > 1] == []  # clean stops: nothing re-sent
    rows = sorted((e.to_dict() for e in lake), key=lambda r: (r["txid"], r["index"]))
    assert rows == java


class Writer:
    """A client writing under root on a thread until stopped (one op list per step)."""

    def __init__(self, hdfs: HdfsCluster, root: str) -> None:
        self.hdfs, self.root = hdfs, root
        self.steps = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hdfs-writer")

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.hdfs.run(changes(self.root, f"s{self.steps:04d}"))
                self.steps += 1
        except BaseException as exc:  # re-raised on leaving the `with`
            self.error = exc

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(DEADLINE_S)
        if self.error is not None:
            raise self.error


def lease_item() -> dict[str, str]:
    """The lease item as stored: holder (host:pid:random), expires_ms, acquired_ms, epoch."""
    item = boto3.client("dynamodb").get_item(
        TableName=STATE_TABLE, ConsistentRead=True,
        Key={STATE_PK: {"S": CLUSTER}, STATE_SK: {"S": STATE_ITEM_LEASE}}).get("Item", {})
    return {name: next(iter(value.values())) for name, value in item.items()}


def holds_lease(agent: AgentProcess) -> bool:
    holder = lease_item().get("holder")
    return holder is not None and int(holder.split(":")[1]) == agent.process.pid


def test_the_standby_process_takes_over_a_killed_leader_and_every_event_arrives(
        ha, queue, state_table, tmp_path):
    root = "/ha-lease"
    ha.run([["mkdirs", root]])
    start = ha.txid()
    configs = [write_agent_config(tmp_path / name, cluster=CLUSTER, queue_url=queue,
                                  uri=ha.uri, conf_dir=ha.conf_dir, state_table=STATE_TABLE,
                                  extra=LEASE) for name in ("1", "2")]
    DynamoCheckpointStore(STATE_TABLE, CLUSTER).save(start)  # the shared checkpoint
    agents: list[AgentProcess] = []
    try:
        with Drainer(queue) as drainer:
            agents += [AgentProcess.start(config) for config in configs]
            wait_for(lambda: any(holds_lease(agent) for agent in agents), "a leader", *agents)
            a, b = sorted(agents, key=lambda agent: not holds_lease(agent))  # a leads
            wait_for(lambda: "standby: waiting for the lease" in b.log.read_text(),
                     "the other to stand by", b)
            with Writer(ha, root) as writer:
                wait_for(lambda: (a.checkpoint() or 0) >= start + 40,
                         "the leader to ship the client's edits", a, b)
                a.process.kill()  # SIGKILL: no flush, no checkpoint, no lease release
                a.process.wait()
                steps_at_kill = writer.steps
                at_kill = lease_item()
                at_takeover = a.checkpoint()
                wait_for(lambda: holds_lease(b), "the standby to take over", b)
                took_over = lease_item()
                wait_for(lambda: b.checkpoint() > at_takeover
                         and writer.steps > steps_at_kill + 5,
                         "the new leader to ship the client's later edits", b)
            last = run_to_event(ha, [["chmod", root, "0750"]])
            b.wait_for_checkpoint(last)
            assert holds_lease(b)
            assert b.stop() == 0, b.log_tail()
            end = b.checkpoint()  # the last event's txid (an edit log roll may follow it)
            received = drainer.finish()
    finally:
        for agent in agents:
            if agent.process.poll() is None:
                agent.kill()

    # A led (epoch 1) until killed, never releasing; B took over (epoch 2) only once A's
    # last renewal had run out, and resumed from the checkpoint A had saved.
    assert int(at_kill["epoch"]) == 1 and int(at_kill["holder"].split(":")[1]) == a.process.pid
    assert int(took_over["epoch"]) == 2
    assert int(took_over["acquired_ms"]) >= int(at_kill["expires_ms"])
    b_log = b.log.read_text()
    assert b_log.index("(epoch 2)") < b_log.index(
        f"shipping cluster {CLUSTER} from txid {at_takeover}")  # B shipped only once leading
    assert end is not None and start < at_takeover < last <= end <= ha.txid()

    # Every event Hadoop's own reader sees is in the queue; each message is a whole in-order
    # run of its group, so a duplicate is a re-sent message, and only of events A had sent
    # but not yet covered by the checkpoint.
    expected = [HdfsEvent.from_dict(row) for row in java_rows(ha.java_events(start, end))]
    check_delivery(received, expected, lambda e: message_group_id(CLUSTER, e.path))
    counts = Counter(e.key for m in received for e in m.events)
    duplicated = sorted(k for k, n in counts.items() if n > 1)
    assert all(txid > at_takeover for _, txid, _ in duplicated), duplicated[:5]
    # B's ranges start at the shared checkpoint (the end of one of A's acknowledged ranges):
    # no hole for the consumer.
    ranges = check_covered(manifests(received), event_keys_by_message(received),
                           [e.key for e in expected], start=start, end=end)
    assert at_takeover in {r.end for r in ranges}
    assert any(r.after == at_takeover for r in ranges)
