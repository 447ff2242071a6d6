"""The agent against a real NameNode when the stream alone cannot tell the whole namespace:

- first start (no checkpoint): SNAPSHOT records of what already exists, at the txid read
  before the listing, then the stream;
- purged edits: the NameNode checkpointed past the agent's checkpoint while it was down, so
  Hadoop's inotify stream raises MissingEventsException; the agent ships a GAP record, then a
  real listing as SNAPSHOT records, then the stream.

Either way, after the consumer applies the queue, `hdfs-events-agent verify` finds the
namespace index equal to the real namespace.
"""

from __future__ import annotations

from hdfs_events.event import EventType
from tests.integration.hdfs.conftest import (
    CLUSTER,
    INDEX_TABLE,
    consume,
    lake_events,
    verify,
)
from tests.kit.live_agent import AgentProcess, write_agent_config


def files(root: str, names: list[str]) -> list[list]:
    return [["write", f"{root}/{name}", f"data of {name}"] for name in names]


def agent_config(tmp_path, hdfs, queue, root: str, checkpoint_txid: int | None = None):
    return write_agent_config(
        tmp_path / "agent", cluster=CLUSTER, queue_url=queue, uri=hdfs.uri,
        conf_dir=hdfs.conf_dir, checkpoint_txid=checkpoint_txid,
        extra=f'[filter]\ncover_dirs = ["{root}"]\n[verify]\nindex_table = "{INDEX_TABLE}"\n')


def last_event_txid(hdfs, after: int) -> int:
    """The txid of the NameNode's newest event (the newest txid may carry none: a block
    allocation), as Hadoop's own stream reads it."""
    return hdfs.java_events(after, hdfs.txid())[-1]["txid"]


def assert_no_drift(config, root: str) -> None:
    result = verify(config, root)
    assert result.returncode == 0 and " 0 differ" in result.stdout, result.stdout + result.stderr


def test_first_start_ships_the_existing_namespace_then_the_changes(hdfs, queue, index_table,
                                                                   tmp_path):
    root = "/first"
    hdfs.run([["mkdirs", f"{root}/old/deep"], *files(f"{root}/old", ["a", "b"]),
              *files(f"{root}/old/deep", ["c"]), ["symlink", f"{root}/old/a", f"{root}/ln"]])
    config = agent_config(tmp_path, hdfs, queue, root)
    agent = AgentProcess.start(config)
    try:
        listed_at = hdfs.txid()
        agent.wait_for_checkpoint(listed_at)  # the listing went out
        hdfs.run([*files(f"{root}/new", ["d"]), ["rename", f"{root}/old/b", f"{root}/new/b"],
                  ["delete", f"{root}/old/deep", True]])
        agent.wait_for_checkpoint(last_event_txid(hdfs, listed_at))
    finally:
        assert agent.stop() == 0, agent.log_tail()
    consume(queue, [root])
    events = lake_events()
    snapshot = [e for e in events if e.type is EventType.SNAPSHOT]
    assert [e.path for e in snapshot] == [root, f"{root}/ln", f"{root}/old", f"{root}/old/a",
                                          f"{root}/old/b", f"{root}/old/deep",
                                          f"{root}/old/deep/c"]
    assert len({e.txid for e in snapshot}) == 1
    later = [e for e in events if e.type is not EventType.SNAPSHOT]
    assert later and all(e.txid > snapshot[0].txid for e in later)
    assert {e.type for e in later} >= {EventType.CREATE, EventType.RENAME, EventType.UNLINK}
    assert_no_drift(config, root)


def test_purged_edits_become_a_gap_then_a_real_listing_and_the_index_matches(
        hdfs, queue, index_table, tmp_path):
    root = "/purged"
    hdfs.run([["mkdirs", f"{root}/keep"], *files(f"{root}/keep", ["a", "b", "c"])])
    started_at = hdfs.txid()
    config = agent_config(tmp_path, hdfs, queue, root, checkpoint_txid=started_at)
    agent = AgentProcess.start(config)
    hdfs.run(files(f"{root}/keep", ["d"]))
    agent.wait_for_checkpoint(last_event_txid(hdfs, started_at))
    assert agent.stop() == 0, agent.log_tail()
    stopped_at = agent.checkpoint()
    assert stopped_at is not None

    # While the agent is down: changes it will never read, then checkpoints purge their edits.
    hdfs.run([["delete", f"{root}/keep/a"], ["rename", f"{root}/keep/b", f"{root}/moved-b"],
              *files(f"{root}/while-down", ["e", "f"]), ["chmod", f"{root}/keep/c", "0600"]])
    hdfs.purge_edits_through(stopped_at + 1)

    agent = AgentProcess.start(config)
    try:
        restarted_at = hdfs.txid()
        agent.wait_for_checkpoint(restarted_at)  # the GAP and the listing went out
        hdfs.run([*files(f"{root}/after", ["g"]), ["delete", f"{root}/while-down/e"]])
        agent.wait_for_checkpoint(last_event_txid(hdfs, restarted_at))
    finally:
        assert agent.stop() == 0, agent.log_tail()
    consume(queue, [root])
    events = lake_events()
    [gap] = [e for e in events if e.type is EventType.GAP]
    assert gap.txid == stopped_at + 1 and gap.gap_end_txid > gap.txid
    snapshot = [e for e in events if e.type is EventType.SNAPSHOT]
    assert {e.path: e.perms for e in snapshot} == {
        root: "0755", f"{root}/keep": "0755", f"{root}/keep/c": "0600", f"{root}/keep/d": "0644",
        f"{root}/moved-b": "0644", f"{root}/while-down": "0755",
        f"{root}/while-down/e": "0644", f"{root}/while-down/f": "0644"}
    assert all(e.txid >= gap.gap_end_txid - 1 for e in snapshot)
    assert "inotify gap" in agent.log.read_text()
    assert_no_drift(config, root)


def test_gap_policy_stop_ships_the_gap_exits_3_and_meets_the_same_gap_again(
        hdfs, queue, index_table, tmp_path):
    root = "/stopped"
    hdfs.run([["mkdirs", root]])
    config = agent_config(tmp_path, hdfs, queue, root, checkpoint_txid=hdfs.txid())
    config.write_text(config.read_text().replace("[inotify]\n",
                                                 '[inotify]\ngap_policy = "stop"\n'))
    stopped_at = hdfs.txid()
    hdfs.run(files(root, ["a", "b"]))
    hdfs.purge_edits_through(stopped_at + 1)

    for attempt in (1, 2):
        agent = AgentProcess.start(config)
        assert agent.process.wait(120) == 3, agent.log_tail()
        assert f"needed txid {stopped_at + 1}" in agent.log_tail(), attempt
        # Not on the gap: a restart reads after the same txid and meets the same gap.
        assert agent.checkpoint() == stopped_at
    consume(queue, [root])
    [gap] = lake_events()  # the same key both times: one GAP in the lake
    assert (gap.type, gap.txid) == (EventType.GAP, stopped_at + 1)
