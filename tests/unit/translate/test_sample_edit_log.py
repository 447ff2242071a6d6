"""The real edit log (Hadoop's own editsStored, layout -61) translated event by event.

Every expected row below was derived by reading Hadoop's InotifyFSEditLogOpTranslator (3.x, with
OP_APPEND, OP_TRUNCATE and erasureCoded) against each RECORD of the file, not by running our code:
- OP_ADD without BLOCK -> CREATE FILE, ctime = ATIME (not MTIME), erasureCoded = (EC policy id
  != 0); layout -61 logs no policy id, so AddCloseOp keeps REPLICATION_POLICY_ID -> false.
- OP_CLOSE -> CLOSE, size = sum of BLOCK/NUM_BYTES (0 without blocks), timestamp = MTIME.
- OP_CONCAT_DELETE -> APPEND target, UNLINK each source, CLOSE target size -1, one txid.
- OP_MKDIR -> CREATE DIRECTORY, ctime = TIMESTAMP, no replication/overwrite/block size.
- OP_SYMLINK -> CREATE SYMLINK, ctime = ATIME.
- OP_SET_OWNER with only USERNAME -> METADATA OWNER, group null.
- MODE 420 = 0644, 493 = 0755, 511 = 0777.
Our contract adds `timestamp` = ctime on CREATE (Hadoop's CreateEvent has only ctime).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hdfs_events.event import HdfsEvent, XAttr
from onprem_agent.editlog import read_ops
from onprem_agent.translate import TranslationStats, translate_batches, translate_ops

C = "c1"
SHV = {"owner": "shv", "group": "supergroup"}
FILE = {"inode_type": "FILE", "replication": 1, "perms": "0644", "overwrite": True,
        "block_size": 512, "erasure_coded": False, **SHV}


def create_file(ts: int) -> dict[str, Any]:
    return {"timestamp": ts, "ctime": ts, **FILE}


# (txid, index, type, path, the other non-null fields). Every field not listed must be null.
EXPECTED: list[tuple[int, int, str, str, dict[str, Any]]] = [
    (4, 0, "CREATE", "/file_create", create_file(1421135800328)),
    (5, 0, "CLOSE", "/file_create", {"size": 0, "timestamp": 1421135800357}),
    (7, 0, "RENAME", "/file_create", {"dst_path": "/file_moved", "timestamp": 1421135800368}),
    (8, 0, "UNLINK", "/file_moved", {"timestamp": 1421135800377}),
    (9, 0, "CREATE", "/directory_mkdir", {"inode_type": "DIRECTORY", "timestamp": 1421135800394,
                                          "ctime": 1421135800394, "perms": "0755", **SHV}),
    (16, 0, "CREATE", "/file_create", create_file(1421135800442)),
    (17, 0, "CLOSE", "/file_create", {"size": 0, "timestamp": 1421135800445}),
    (18, 0, "METADATA", "/file_create", {"metadata_type": "REPLICATION", "replication": 1}),
    (19, 0, "METADATA", "/file_create", {"metadata_type": "PERMS", "perms": "0777"}),
    (20, 0, "METADATA", "/file_create", {"metadata_type": "OWNER", "owner": "newOwner"}),
    (21, 0, "METADATA", "/file_create", {"metadata_type": "TIMES", "mtime": 1285195527000,
                                         "atime": 1285195527000}),
    (23, 0, "RENAME", "/file_create", {"dst_path": "/file_moved", "timestamp": 1421135800485}),
    (24, 0, "CREATE", "/file_concat_target", create_file(1421135800495)),
    (34, 0, "CLOSE", "/file_concat_target", {"size": 1536, "timestamp": 1421135801050}),
    (35, 0, "CREATE", "/file_concat_0", create_file(1421135801053)),
    (45, 0, "CLOSE", "/file_concat_0", {"size": 1536, "timestamp": 1421135801091}),
    (46, 0, "CREATE", "/file_concat_1", create_file(1421135801095)),
    (56, 0, "CLOSE", "/file_concat_1", {"size": 1536, "timestamp": 1421135801126}),
    (57, 0, "APPEND", "/file_concat_target", {"new_block": False}),
    (57, 1, "UNLINK", "/file_concat_0", {"timestamp": 1421135801130}),
    (57, 2, "UNLINK", "/file_concat_1", {"timestamp": 1421135801130}),
    (57, 3, "CLOSE", "/file_concat_target", {"size": -1, "timestamp": 1421135801130}),
    (58, 0, "CREATE", "/file_create", create_file(1421135810102)),
    (65, 0, "CLOSE", "/file_create", {"size": 1024, "timestamp": 1421135810122}),
    (66, 0, "TRUNCATE", "/file_create", {"size": 512, "timestamp": 1421135810125}),
    (67, 0, "CREATE", "/file_symlink", {"inode_type": "SYMLINK", "timestamp": 1421135810132,
                                        "ctime": 1421135810132, "perms": "0777",
                                        "symlink_target": "/file_concat_target", **SHV}),
    (68, 0, "CREATE", "/hard-lease-recovery-test", create_file(1421135810135)),
    # The lease-recovered file: its one block grew to 11 bytes (OP_UPDATE_BLOCKS, txid 72).
    (75, 0, "CLOSE", "/hard-lease-recovery-test", {"size": 11, "timestamp": 1421135812235}),
    (82, 0, "METADATA", "/file_concat_target", {
        "metadata_type": "ACLS",
        "acls": ["user::rw-", "user:user:rw-", "group::-w-", "mask::rw-", "other::---"]}),
    (83, 0, "METADATA", "/file_concat_target", {
        "metadata_type": "XATTRS", "xattrs_removed": False,
        "xattrs": [{"namespace": "USER", "name": "a1", "value": "0x313233"}]}),
    (84, 0, "METADATA", "/file_concat_target", {
        "metadata_type": "XATTRS", "xattrs_removed": False,
        "xattrs": [{"namespace": "USER", "name": "a2", "value": "0x373839"}]}),
    (85, 0, "METADATA", "/file_concat_target", {
        "metadata_type": "XATTRS", "xattrs_removed": True,
        "xattrs": [{"namespace": "USER", "name": "a2", "value": None}]}),
]
# Ops of the sample that Hadoop's translator maps to no event.
NO_EVENT_TXIDS = {1, 2, 3, 6, 10, 11, 12, 13, 14, 15, 22, *range(25, 34), *range(36, 45),
                  *range(47, 56), *range(59, 65), *range(69, 75), *range(76, 82), 86, 87, 88}


def expected_dicts(cluster: str = C) -> list[dict[str, Any]]:
    from hdfs_events.event import FIELDS

    rows = []
    for txid, index, type_, path, extra in EXPECTED:
        row = dict.fromkeys(FIELDS)
        row.update(cluster=cluster, txid=txid, index=index, type=type_, path=path, **extra)
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def events(edits_sample: Path) -> list[HdfsEvent]:
    return list(translate_ops(read_ops(edits_sample), C))


def test_every_event_matches_hadoops_translation(events: list[HdfsEvent]) -> None:
    got = [e.to_dict() for e in events]
    expected = expected_dicts()
    assert [(e["txid"], e["index"]) for e in got] == [(e["txid"], e["index"]) for e in expected]
    for g, x in zip(got, expected, strict=True):
        assert g == x, f"txid {x['txid']} index {x['index']}"


def test_the_sample_covers_every_event_type_and_metadata_type(events: list[HdfsEvent]) -> None:
    assert {e.type for e in events} == {"CREATE", "CLOSE", "APPEND", "RENAME", "METADATA",
                                        "UNLINK", "TRUNCATE"}
    assert {e.inode_type for e in events if e.type == "CREATE"} == {"FILE", "DIRECTORY",
                                                                     "SYMLINK"}
    assert {e.metadata_type for e in events if e.type == "METADATA"} == {
        "REPLICATION", "PERMS", "OWNER", "TIMES", "ACLS", "XATTRS"}


def test_concat_delete_yields_four_events_under_one_txid(events: list[HdfsEvent]) -> None:
    concat = [e for e in events if e.txid == 57]
    assert [(e.index, e.type) for e in concat] == [(0, "APPEND"), (1, "UNLINK"), (2, "UNLINK"),
                                                   (3, "CLOSE")]
    assert len({e.key for e in events}) == len(events)  # (cluster, txid, index) is unique


def test_xattrs_are_typed_records(events: list[HdfsEvent]) -> None:
    assert [e.xattrs for e in events if e.txid == 85] == [(XAttr("USER", "a2", None),)]


def test_only_the_last_op_without_events_yields_an_empty_batch(edits_sample: Path) -> None:
    stats = TranslationStats()
    batches = list(translate_batches(read_ops(edits_sample), C, stats=stats))
    with_events = [t for t in range(1, 89) if t not in NO_EVENT_TXIDS]
    # One batch per op with events, in order, then the last op's, which has none: the
    # checkpoint can move to the end of the file.
    assert 88 in NO_EVENT_TXIDS
    assert [b.txid for b in batches] == [*with_events, 88]
    assert [b.txid for b in batches if not b.events] == [88]
    assert stats.ops == 88 and stats.events == 32
    assert not stats.unknown_opcodes  # every opcode of the sample is known


@pytest.mark.parametrize(("from_txid", "to_txid"), [
    (None, None), (0, 88), (56, None), (57, None), (56, 57), (None, 4), (4, 4), (88, None),
    (30, 20), (3, 8),
])
def test_txid_range_keeps_events_after_from_and_up_to_to(
        edits_sample: Path, from_txid: int | None, to_txid: int | None) -> None:
    got = [(e.txid, e.index) for e in
           translate_ops(read_ops(edits_sample), C, from_txid=from_txid, to_txid=to_txid)]
    lo = -1 if from_txid is None else from_txid
    hi = 10**9 if to_txid is None else to_txid
    assert got == [(t, i) for t, i, *_ in EXPECTED if lo < t <= hi]


def test_cluster_name_is_stamped_on_every_event(edits_sample: Path) -> None:
    events = list(translate_ops(read_ops(edits_sample), "prod-eu.1"))
    assert {e.cluster for e in events} == {"prod-eu.1"}
    assert [e.to_dict() for e in events] == expected_dicts("prod-eu.1")
