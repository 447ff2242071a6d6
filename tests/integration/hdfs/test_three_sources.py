"""Three readings of one real NameNode's edits agree event for event, field for field:

(a) what the live agent shipped to SQS (`hdfs-events-agent run`, a process of its own, reading
    Hadoop's DFSInotifyEventInputStream through its JVM bridge);
(b) `hdfs-events-agent translate` over the NameNode's own finalized edit segments, turned to XML
    by Hadoop's OfflineEditsViewer;
(c) Hadoop's DFSInotifyEventInputStream read by a plain Java program (InotifyReader.java).

The workload makes every event type and every field a client can produce: any difference is a
bug in our translation (b) or conversion (a).
"""

from __future__ import annotations

from collections import Counter

from hdfs_events.event import FIELDS, EventType, MetadataType
from onprem_agent.editlog import read_ops
from onprem_agent.translate import translate_ops
from tests.integration.hdfs.conftest import CLUSTER, as_rows, java_rows, received_events
from tests.kit.live_agent import AgentProcess, write_agent_config

# Spaces, quotes and non-ASCII in every path.
BASE = "/three sources/ü 'q\" ✓"
ACL = ["user::rwx", "user:alice:r-x", "group::r-x", "mask::r-x", "other::---",
       "default:user:bob:rwx"]

WORKLOAD = [
    ["mkdirs", f"{BASE}/dir"],
    ["write", f"{BASE}/a.txt", "hello"],                              # CREATE, CLOSE
    ["write", f"{BASE}/a.txt", "hello again", True],                  # create with overwrite
    ["append", f"{BASE}/a.txt", " more"],                             # APPEND, CLOSE
    ["append", f"{BASE}/a.txt", " in a new block", True],             # APPEND to a new block
    ["write", f"{BASE}/t.txt", "0123456789"],
    ["truncate", f"{BASE}/t.txt", 4],                                 # TRUNCATE
    ["rename", f"{BASE}/a.txt", f"{BASE}/dir/a.txt"],                 # RENAME
    ["write", f"{BASE}/b.txt", "bbb"],
    ["rename", f"{BASE}/b.txt", f"{BASE}/dir/a.txt", True],           # rename with overwrite
    ["write", f"{BASE}/c0", "c0"], ["write", f"{BASE}/c1", "c1"], ["write", f"{BASE}/c2", "c2"],
    ["concat", f"{BASE}/c0", [f"{BASE}/c1", f"{BASE}/c2"]],          # APPEND, UNLINK x2, CLOSE
    ["chmod", f"{BASE}/dir", "1750"],                                 # METADATA PERMS
    ["chown", f"{BASE}/t.txt", "etl", "hadoop"],                      # METADATA OWNER
    ["chown", f"{BASE}/t.txt", None, "analysts"],                     # group only
    ["setrep", f"{BASE}/t.txt", 2],                                   # METADATA REPLICATION
    ["set_times", f"{BASE}/t.txt", 1_700_000_000_000, 1_700_000_000_001],  # METADATA TIMES
    ["setxattr", f"{BASE}/t.txt", "user.team", "data-eng"],          # METADATA XATTRS
    ["removexattr", f"{BASE}/t.txt", "user.team"],
    ["setacl", f"{BASE}/dir", ACL],                                   # METADATA ACLS
    ["removeacl", f"{BASE}/dir"],
    ["symlink", f"{BASE}/t.txt", f"{BASE}/link"],                     # CREATE SYMLINK
    ["trash", f"{BASE}/c0"],                                          # rename into .Trash
    ["mkdirs", f"{BASE}/tree/x/y"], ["write", f"{BASE}/tree/x/y/f", "f"],
    ["delete", f"{BASE}/t.txt"],                                      # UNLINK of a file
    ["delete", f"{BASE}/tree", True],                                 # UNLINK of a tree
]


def test_agent_edit_log_and_hadoop_agree_on_every_event_and_field(hdfs, queue, tmp_path):
    start = hdfs.txid()
    agent = AgentProcess.start(write_agent_config(
        tmp_path / "agent", cluster=CLUSTER, queue_url=queue, uri=hdfs.uri,
        conf_dir=hdfs.conf_dir, checkpoint_txid=start))
    try:
        hdfs.run(WORKLOAD)
        end = hdfs.txid()
        java = java_rows(hdfs.java_events(start, end))
        agent.wait_for_checkpoint(java[-1]["txid"])
    finally:
        assert agent.stop() == 0, agent.log_tail()
    # Up to `end`: at a full hour the NameNode's trash emptier renames .Trash/Current (the
    # workload's `trash` op made one), an event of its own after the workload's.
    live = [row for row in as_rows(received_events(queue)) if row["txid"] <= end]

    hdfs.roll_edits()  # finalizes the segment holding the workload
    translated = []
    for i, segment in enumerate(hdfs.edit_segments()):
        xml = hdfs.edits_xml(segment, tmp_path / f"edits-{i}.xml")
        translated += as_rows(list(translate_ops(read_ops(xml), CLUSTER, source=str(xml),
                                                 from_txid=start, to_txid=end)))

    types = Counter(row["type"] for row in java)
    assert set(types) == {t.value for t in EventType} - {"GAP", "SNAPSHOT"}, types
    assert {row["metadata_type"] for row in java} - {None} == {m.value for m in MetadataType}
    assert any(row["new_block"] for row in java) and any(row["overwrite"] for row in java)
    assert any(row["inode_type"] == "SYMLINK" for row in java)
    for name, rows in (("live agent", live), ("edit log translation", translated)):
        assert len(rows) == len(java), f"{name}: {len(rows)} events, Hadoop {len(java)}"
        for mine, hadoops in zip(rows, java, strict=True):
            differ = [f for f in FIELDS if mine[f] != hadoops[f]]
            assert not differ, (f"{name} differs from Hadoop at txid {hadoops['txid']} "
                                f"index {hadoops['index']} in {differ}:\n  ours   {mine}\n"
                                f"  Hadoop {hadoops}")
    # Every field of the contract was compared; these carried a value in some event. Only the
    # agent's own records (GAP, a listing's SNAPSHOT) carry gap_end_txid and children_num: no
    # inotify or edit-log event does.
    carried = {f for f in FIELDS for row in java if row[f] is not None}
    assert carried >= set(FIELDS) - {"gap_end_txid", "children_num"}, set(FIELDS) - carried
