"""The attribution transform (glue_jobs/attribution.py) on small frames with explicit schemas,
and its pure parts (glue_jobs/attribution_match.py). Audit lines as the parser makes them from
Hadoop 3.3.4's own lines (hdfs_events.audit.parse_line)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from glue_jobs.attribution import ATTRIBUTION_SCHEMA, attribute_events
from glue_jobs.attribution_match import EventSide, mode_octal, perm_agrees
from glue_jobs.audit_schema import AUDIT_RECORD_SCHEMA
from hdfs_events.audit import AuditRecord, LineSource, parse_line
from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType
from tests.integration.glue.frames import assert_frames_equal, curated_frame

T0 = 1_795_700_000_000  # epoch ms of the first edit
# Each case is a cluster of its own (bounds and groups never cross clusters), so one transform
# run over all of them answers every case: a Spark job costs seconds, a row nothing.
CASES: dict[str, tuple[list[HdfsEvent], list[AuditRecord]]] = {}


def line(c: str, offset: int, ms: int, user: str, cmd: str, src: str, dst: str = "null",
         perm: str = "null", allowed: bool = True) -> AuditRecord:
    """A line as the NameNode's log4j layout writes it, `ms` after T0."""
    stamp = datetime.fromtimestamp((T0 + ms) / 1000, UTC)
    text = (f"{stamp:%Y-%m-%d %H:%M:%S},{stamp.microsecond // 1000:03d} INFO "
            f"FSNamesystem.audit: allowed={str(allowed).lower()}\tugi={user} (auth:KERBEROS)\t"
            f"ip=/10.0.0.{offset % 250}\tcmd={cmd}\tsrc={src}\tdst={dst}\tperm={perm}\tproto=rpc")
    record = parse_line(text, c, LineSource("nn1", "f1", offset))
    assert record.reason is None, record.reason
    return record


def create(c: str, txid: int, ms: int, path: str, owner: str,
           inode: INodeType = INodeType.FILE) -> HdfsEvent:
    return HdfsEvent(cluster=c, txid=txid, index=0, type=EventType.CREATE, path=path,
                     timestamp=T0 + ms, ctime=T0 + ms, inode_type=inode, owner=owner,
                     group="hadoop", perms="0644" if inode is INodeType.FILE else "0755")


def event(c: str, txid: int, type_: EventType, path: str, ms: int | None = None,
          index: int = 0, **fields: object) -> HdfsEvent:
    return HdfsEvent(cluster=c, txid=txid, index=index, type=type_, path=path,
                     timestamp=None if ms is None else T0 + ms, **fields)


def case(c: str, events: list[HdfsEvent], lines: list[AuditRecord]) -> str:
    CASES[c] = (events, lines)
    return c


KTH = case("kth", [create("kth", 10, 0, "/d/f", "alice"),
                   event("kth", 11, EventType.CLOSE, "/d/f", 5, size=3),
                   event("kth", 12, EventType.RENAME, "/d/f", 20, dst_path="/d/g"),
                   create("kth", 13, 40, "/d/f", "bob"),
                   event("kth", 14, EventType.RENAME, "/d/f", 60, dst_path="/d/g")],
           [line("kth", 0, 2, "alice", "create", "/d/f", perm="alice:hadoop:rw-r--r--"),
            line("kth", 1, 22, "carol", "rename", "/d/f", "/d/g"),
            line("kth", 2, 41, "bob", "create", "/d/f", perm="bob:hadoop:rw-r--r--"),
            line("kth", 3, 61, "dave", "rename", "/d/f", "/d/g"),
            # refused: a signal, never a candidate
            line("kth", 4, 61, "erin", "rename", "/d/f", "/d/g", allowed=False)])
# carol's line comes first though dave's rename has the lower txid: either order is possible
# (each line is after both edits), so neither rename gets a user.
SWAP = case("swap", [event("swap", 20, EventType.RENAME, "/d/x", 100, dst_path="/d/y"),
                     event("swap", 21, EventType.UNLINK, "/d/y", 101),
                     event("swap", 22, EventType.RENAME, "/d/x", 102, dst_path="/d/y")],
            [line("swap", 0, 103, "carol", "rename", "/d/x", "/d/y"),
             line("swap", 1, 103, "erin", "delete", "/d/y"),
             line("swap", 2, 104, "dave", "rename", "/d/x", "/d/y")])
OWNERS = case("owners", [create("owners", 30, 100, "/d/z", "alice"),
                         create("owners", 31, 101, "/d/z", "bob")],
              [line("owners", 0, 102, "bob", "create", "/d/z", perm="bob:hadoop:rw-r--r--"),
               line("owners", 1, 103, "alice", "create", "/d/z",
                    perm="alice:hadoop:rw-r--r--")])
# bob's mkdirs of a directory that already existed is audited and makes no edit.
NO_EDIT = case("noedit", [create("noedit", 40, 100, "/d/dir", "alice", INodeType.DIRECTORY)],
               [line("noedit", 0, 101, "alice", "mkdirs", "/d/dir",
                     perm="alice:hadoop:rwxr-xr-x"),
                line("noedit", 1, 102, "bob", "mkdirs", "/d/dir", perm="alice:hadoop:rwxr-xr-x")])
CONCAT = case("concat", [
    event("concat", 50, EventType.CLOSE, "/d/t", 100, size=4),
    event("concat", 51, EventType.APPEND, "/d/t", new_block=False),
    event("concat", 51, EventType.UNLINK, "/d/s1", 110, index=1),
    event("concat", 51, EventType.CLOSE, "/d/t", 110, index=2, size=-1),
    event("concat", 52, EventType.METADATA, "/d/t", metadata_type=MetadataType.PERMS,
          perms="0600"),
    event("concat", 53, EventType.APPEND, "/d/t", new_block=False),
    event("concat", 54, EventType.CLOSE, "/d/t", 130, size=9),
    event("concat", 55, EventType.TRUNCATE, "/d/t", 140, size=0)],
    [line("concat", 0, 111, "alice", "concat", "[/d/s1]", "/d/t", "alice:hadoop:rw-r--r--"),
     line("concat", 1, 120, "bob", "setPermission", "/d/t", perm="alice:hadoop:rw-------"),
     line("concat", 2, 125, "carol", "append", "/d/t"),
     line("concat", 3, 141, "dave", "truncate", "/d/t", perm="alice:hadoop:rw-------")])
RENAMED = case("renamed", [create("renamed", 60, 100, "/d/w", "alice"),
                           event("renamed", 61, EventType.RENAME, "/d/v", 105, dst_path="/d/w"),
                           event("renamed", 62, EventType.CLOSE, "/d/w", 110, size=1)],
               [line("renamed", 0, 101, "alice", "create", "/d/w",
                     perm="alice:hadoop:rw-r--r--"),
                line("renamed", 1, 106, "bob", "rename", "/d/v", "/d/w")])
ROW = case("row", [create("row", 70, 100, "/d/u", "alice")],
           [line("row", 7, 101, "alice", "create", "/d/u", perm="alice:hadoop:rw-r--r--")])


@pytest.fixture(scope="module")
def attribution(spark):
    """Every case's attribution rows, from one run of the transform."""
    events = [(e, "2026-11-26") for evs, _ in CASES.values() for e in evs]
    lines = [r for _, rs in CASES.values() for r in rs]
    audit = spark.createDataFrame(
        [tuple(r.to_json()[f.name] for f in AUDIT_RECORD_SCHEMA.fields) for r in lines],
        AUDIT_RECORD_SCHEMA)
    return attribute_events(curated_frame(spark, events), audit).cache()


def users(attribution, c: str) -> dict[tuple[int, int], str]:
    return {(r["txid"], r["index"]): r["user"]
            for r in attribution.where(attribution.cluster == c).collect()}


def test_the_kth_call_on_a_path_is_the_kth_line_when_times_tell_them_apart(attribution):
    assert users(attribution, KTH) == {(10, 0): "alice", (11, 0): "alice", (12, 0): "carol",
                                       (13, 0): "bob", (14, 0): "dave"}


def test_two_users_calls_whose_lines_could_be_swapped_stay_unattributed(attribution):
    assert users(attribution, SWAP) == {(21, 0): "erin"}


def test_creates_are_told_apart_by_the_owner_the_line_names(attribution):
    assert users(attribution, OWNERS) == {(30, 0): "alice", (31, 0): "bob"}


def test_a_line_that_made_no_event_from_another_user_leaves_the_event_unattributed(
        attribution):
    assert users(attribution, NO_EDIT) == {}


def test_concat_appends_and_metadata_without_time_take_their_calls_user(attribution):
    assert users(attribution, CONCAT) == {
        (51, 0): "alice", (51, 1): "alice", (51, 2): "alice", (52, 0): "bob",
        (53, 0): "carol", (54, 0): "carol", (55, 0): "dave"}


def test_a_close_after_a_rename_of_its_path_takes_no_user(attribution):
    assert users(attribution, RENAMED) == {(60, 0): "alice", (61, 0): "bob"}


def test_rows_carry_the_lines_identity_and_what_it_says_of_the_caller(spark, attribution):
    expected = spark.createDataFrame(
        [(ROW, 70, 0, "alice", "KERBEROS", None, "10.0.0.7", None, "nn1", "f1", 7)],
        ATTRIBUTION_SCHEMA)
    assert_frames_equal(attribution.where(attribution.cluster == ROW), expected)


@pytest.mark.parametrize(("symbolic", "octal"), [
    ("rw-r--r--", "0644"), ("rwxr-x--T", "1750"), ("rwxrwxrwt", "1777"), ("---------", "0000"),
    ("rwxr-x---+", None), ("garbage!!", None)])
def test_mode_octal_reads_fspermission_strings(symbolic, octal):
    assert mode_octal(symbolic) == octal


def test_perm_agrees_compares_only_what_the_class_names():
    alice_file = EventSide(1, 0, 0, owner="alice", group="hadoop", perms="0644")
    assert perm_agrees("create", alice_file, "alice:hadoop:rw-r--r--")
    assert not perm_agrees("create", alice_file, "bob:hadoop:rw-r--r--")
    assert not perm_agrees("setPermission", EventSide(1, 0, 0, perms="0600"),
                           "bob:hadoop:rw-r--r--")
    assert perm_agrees("setOwner", EventSide(1, 0, 0, group="etl"), "bob:etl:rw-r--r--")
    assert perm_agrees("rename", alice_file, "bob:x:---------")
