"""The agent against a real NameNode when the stream alone cannot tell the whole namespace:

- first start (no checkpoint): SNAPSHOT records of what already exists, at the txid read
  before the listing, then the stream;
- purged edits: the NameNode checkpointed past the agent's checkpoint while it was down, so
  Hadoop's inotify stream raises MissingEventsException; the agent ships a GAP record, then a
  real listing as SNAPSHOT records, then the stream (`gap_policy = "snapshot"`), or has the
  inventory job repair the index from the NameNode's image and streams after it
  (`gap_policy = "fsimage"`: the job run for real, tests/kit/glue_runs.py).

Either way, after the consumer applies the queue, `hdfs-events-agent verify` finds the
namespace index equal to the real namespace.

This module's NameNode hands out listings of 3 entries a page (dfs.ls.limit; 1000 by
default), so every listing here, the agent's and verify's, goes page by page.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Iterator

import boto3
import pytest

from hdfs_events.event import EventType
from hdfs_events_cli.index_status import read_status
from onprem_agent.live.hadoop import HadoopClient
from onprem_agent.live.snapshot import walk
from tests.integration.hdfs.conftest import (
    CLUSTER,
    INDEX_TABLE,
    LAKE_BUCKET,
    PURGING,
    consume,
    lake_events,
    raw_lake_events,
    verify,
)
from tests.kit.glue_runs import LocalGlueRuns
from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.hadoop.jars import LIB
from tests.kit.image_start import listing_calls
from tests.kit.live_agent import AgentProcess, write_agent_config

PAGE = 3


@pytest.fixture(scope="module")
def hdfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HdfsCluster]:
    with HdfsCluster.start(tmp_path_factory.mktemp("hdfs"),
                           conf={"dfs.namenode.acls.enabled": "true", **PURGING,
                                 "dfs.ls.limit": str(PAGE)}) as cluster:
        yield cluster


def files(root: str, names: list[str]) -> list[list]:
    return [["write", f"{root}/{name}", f"data of {name}"] for name in names]


def agent_config(tmp_path, hdfs, queue, root: str, checkpoint_txid: int | None = None,
                 extra: str = ""):
    return write_agent_config(
        tmp_path / "agent", cluster=CLUSTER, queue_url=queue, uri=hdfs.uri,
        conf_dir=hdfs.conf_dir, checkpoint_txid=checkpoint_txid,
        extra=f'[filter]\ncover_dirs = ["{root}"]\n[verify]\nindex_table = "{INDEX_TABLE}"\n'
        + extra)


def last_event_txid(hdfs, after: int) -> int:
    """The txid of the NameNode's newest event (the newest txid may carry none: a block
    allocation), as Hadoop's own stream reads it."""
    return hdfs.java_events(after, hdfs.txid())[-1]["txid"]


def assert_no_drift(config, root: str) -> None:
    result = verify(config, root)
    assert result.returncode == 0 and " 0 differ" in result.stdout, result.stdout + result.stderr


def test_first_start_ships_the_existing_namespace_then_the_changes(hdfs, queue, index_table,
                                                                   tmp_path, jvm):
    root = "/first"
    many = [f"f{i}" for i in range(10)]
    hdfs.run([["mkdirs", f"{root}/old/deep"], *files(f"{root}/old", ["a", "b"]),
              *files(f"{root}/old/deep", ["c"]), ["symlink", f"{root}/old/a", f"{root}/ln"],
              *files(root, ["old-x"]), ["mkdirs", f"{root}/many"], *files(f"{root}/many", many)])
    client = HadoopClient(hdfs.uri)
    try:
        lister = client.lister()
        listed = list(walk(lister, [f"{root}/many"], workers=1))
        assert len(listed) == 11
        assert lister.pages == 4  # 10 children, 3 a page
        # The root's getFileStatus and each page's HdfsFileStatus carry a directory's count.
        assert [e.children_num for e in listed] == [10] + [None] * 10
    finally:
        client.close()
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
    # Pre-order, each directory's children in the NameNode's order: /first/old/deep/c before
    # /first/old-x, which a sort of whole paths would put first.
    assert [e.path for e in snapshot] == [
        root, f"{root}/ln", f"{root}/many", *(f"{root}/many/{name}" for name in many),
        f"{root}/old", f"{root}/old/a", f"{root}/old/b", f"{root}/old/deep",
        f"{root}/old/deep/c", f"{root}/old-x"]
    assert len({e.txid for e in snapshot}) == 1
    assert {e.path: e.children_num for e in snapshot if e.children_num is not None} == {
        root: 4, f"{root}/many": 10, f"{root}/old": 3, f"{root}/old/deep": 1}
    assert [e.index for e in snapshot] == list(range(len(snapshot)))
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


IMAGE_JOB = "hdfs-events-namespace-inventory"


def test_purged_edits_repaired_from_the_fsimage_list_nothing_and_the_index_matches(
        hdfs, queue, index_table, tmp_path):
    """gap_policy = "fsimage": the GAP record, then the inventory job repairs the index from
    the NameNode's image (its entries at T, what the image lacks removed, the position moved
    from the gap to T) and the stream goes on at T+1; no listing RPC, no SNAPSHOT record."""
    root = "/repaired"
    glue = boto3.client("glue")
    glue.create_job(Name=IMAGE_JOB, Role="arn:aws:iam::123456789012:role/glue",
                    Command={"Name": "glueetl", "ScriptLocation": "s3://assets/x.py"},
                    DefaultArguments={"--target": f"s3://{LAKE_BUCKET}",
                                      "--index_table": INDEX_TABLE, "--index_prefixes": root})
    (tmp_path / "download").mkdir()
    config = write_agent_config(
        tmp_path / "agent", cluster=CLUSTER, queue_url=queue, uri=hdfs.uri,
        conf_dir=hdfs.conf_dir, checkpoint_txid=hdfs.txid(),
        hdfs_extra=f'classpath = ["{LIB}/*"]\n', inotify_extra='gap_policy = "fsimage"\n',
        extra=f'[filter]\ncover_dirs = ["{root}"]\n[verify]\nindex_table = "{INDEX_TABLE}"\n'
        f'[fsimage]\nbucket = "{LAKE_BUCKET}"\ndownload_dir = "{tmp_path / "download"}"\n'
        f'inventory_job = "{IMAGE_JOB}"\nindex_wait_s = 300\n')
    agent = AgentProcess.start(config)
    try:
        started_at = hdfs.txid()
        hdfs.run([["mkdirs", f"{root}/keep/deep"], *files(f"{root}/keep", ["a", "b", "c"]),
                  *files(f"{root}/keep/deep", ["x", "y"]), ["mkdirs", f"{root}/old-name/sub"],
                  *files(f"{root}/old-name/sub", ["z"]), *files(f"{root}/many",
                                                                [f"m{i:03}" for i in range(12)])])
        agent.wait_for_checkpoint(last_event_txid(hdfs, started_at))
    finally:
        assert agent.stop() == 0, agent.log_tail()
    stopped_at = agent.checkpoint()
    assert stopped_at is not None
    consume(queue, [root])  # the index is applied through the agent's checkpoint

    # While the agent is down: changes it will never read, then checkpoints purge their edits.
    hdfs.run([["delete", f"{root}/keep/a"], ["delete", f"{root}/keep/deep", True],
              ["rename", f"{root}/old-name", f"{root}/new-name"],
              ["chmod", f"{root}/keep/c", "0600"], *files(f"{root}/while-down", ["e", "f"]),
              *(["delete", f"{root}/many/m{i:03}"] for i in range(0, 12, 2))])
    hdfs.purge_edits_through(stopped_at + 1)
    listed_before = listing_calls(hdfs)

    with LocalGlueRuns(IMAGE_JOB, "glue_jobs.namespace_inventory", os.environ) as runs:
        agent = AgentProcess.start(config)
        try:
            # The run's process ends after its marker, which the agent may see first.
            agent.wait_for(lambda: bool(runs.finished) and (
                (agent.checkpoint() or 0) > stopped_at or runs.finished[0][1] != 0),
                lambda: f"{runs.finished} {agent.log_tail()}", timeout_s=600)
            assert [code for _, code, _ in runs.finished] == [0], runs.finished
            image_txid = agent.checkpoint()
            assert image_txid is not None and image_txid > stopped_at + 1
            hdfs.run([*files(f"{root}/after", ["g"]), ["delete", f"{root}/while-down/e"],
                      ["rename", f"{root}/new-name/sub/z", f"{root}/keep/z"]])
            agent.wait_for_checkpoint(last_event_txid(hdfs, image_txid))
        finally:
            assert agent.stop() == 0, agent.log_tail()
    assert listing_calls(hdfs) == listed_before, "the repair listed the namespace"
    [run] = glue.get_job_runs(JobName=IMAGE_JOB)["JobRuns"]
    assert run["Arguments"]["--repair_after"] == str(stopped_at), run["Arguments"]
    assert "gap repair from the fsimage" in agent.log.read_text()

    consume(queue, [root])
    events = lake_events()
    [gap] = [e for e in events if e.type is EventType.GAP]
    assert gap.txid == stopped_at + 1 and gap.gap_end_txid > gap.txid
    assert not [e for e in events if e.type is EventType.SNAPSHOT]
    status = read_status(boto3.client("dynamodb"), INDEX_TABLE, CLUSTER)
    assert status.txid is not None and status.txid > image_txid
    assert_no_drift(config, root)


def wait_for_messages(queue: str, agent: AgentProcess, timeout_s: float = 120) -> None:
    sqs, deadline = boto3.client("sqs"), time.monotonic() + timeout_s
    while int(sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=[
            "ApproximateNumberOfMessages"])["Attributes"]["ApproximateNumberOfMessages"]) == 0:
        assert agent.process.poll() is None, agent.log_tail()
        assert time.monotonic() < deadline, agent.log_tail()
        time.sleep(0.02)


def test_an_agent_killed_mid_snapshot_lists_again_and_each_key_lands_once(
        hdfs, queue, index_table, tmp_path):
    root = "/killed"
    dirs = [f"d{i:03}" for i in range(40)]
    hdfs.run([op for d in dirs for op in (["mkdirs", f"{root}/{d}"],
                                          ["write", f"{root}/{d}/f", ""])])
    # One message per path, one SendMessageBatch at a time: the snapshot takes a few seconds
    # to ship, and the agent is killed once the first of it is in the queue.
    config = agent_config(tmp_path, hdfs, queue, root,
                          extra='[sending]\nmax_in_flight_batches = 1\n')
    config.write_text(config.read_text().replace('[packing]\n', '[packing]\ngroup_by = "path"\n'))
    for _ in range(2):  # the second run, at an unchanged namespace, is killed again
        agent = AgentProcess.start(config)
        wait_for_messages(queue, agent)
        agent.kill()  # SIGKILL
        assert agent.checkpoint() is None  # part way: nothing of the snapshot is done
    hdfs.run([["delete", f"{root}/d000", True], *files(f"{root}/new", ["g"])])
    agent = AgentProcess.start(config)
    try:
        agent.wait_for_checkpoint(hdfs.txid())
    finally:
        assert agent.stop() == 0, agent.log_tail()
    consume(queue, [root])
    copies: dict[tuple[str, int, int], set[str]] = defaultdict(set)
    for event in raw_lake_events():
        copies[event.key].add(event.path)
    # Killed twice at txid T (nothing changed in between, so the same walk): a key re-sent
    # carries the same path; the last run listed the changed namespace at T' > T.
    assert all(len(paths) == 1 for paths in copies.values())
    snapshots = [e for e in lake_events() if e.type is EventType.SNAPSHOT]
    killed_at, listed_at = sorted({e.txid for e in snapshots})
    partial = [e for e in snapshots if e.txid == killed_at]
    last = [e for e in snapshots if e.txid == listed_at]
    assert partial  # shipped before the kills, at T: in the lake, never in the index
    assert [e.index for e in last] == list(range(len(last)))
    assert [e.path for e in last] == [
        root, *(p for d in dirs[1:] for p in (f"{root}/{d}", f"{root}/{d}/f")),
        f"{root}/new", f"{root}/new/g"]
    assert_no_drift(config, root)  # the pieces at T were never applied: d000 is gone
