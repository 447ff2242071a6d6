"""The contract's one-step check and JSON, both forms: check_event's verdict and the sparse JSON
(the agent's wire), the canonical JSON (the consumer's lake line), exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hdfs_events import event_json
from hdfs_events.envelope import decode_envelope, decode_message, encode_body
from hdfs_events.event import EventFormatError, EventType, HdfsEvent, INodeType, MetadataType, XAttr
from hdfs_events.event_json import checked_canonical_json, checked_sparse_json
from hdfs_events.validation import INT_FIELD_RANGES, check_event
from onprem_agent.editlog import read_ops
from onprem_agent.packer import EventPacker
from onprem_agent.translate import translate_ops
from tests.kit.workload import write_edit_log
from tests.unit.contract import strategies


def verdict(event: HdfsEvent) -> tuple[str, str]:
    """What the agent and the consumer must do with `event`: the contract's reason, or the
    sparse JSON and the canonical JSON (the generic serialisers)."""
    try:
        check_event(event)
    except EventFormatError as exc:
        return f"refused: {exc}", f"refused: {exc}"
    return event.to_sparse_json(), event.to_json()


def checked(event: HdfsEvent) -> tuple[str, str]:
    written = []
    for write in (checked_sparse_json, checked_canonical_json):
        try:
            written.append(write(event))
        except EventFormatError as exc:
            written.append(f"refused: {exc}")
    return written[0], written[1]


def test_matches_the_contract_on_the_real_edit_log(edits_sample: Path) -> None:
    events = list(translate_ops(read_ops(edits_sample), "c1"))
    assert [checked(e) for e in events] == [verdict(e) for e in events]


def test_every_message_packed_from_a_generated_workload_passes_the_consumers_checks(
        tmp_path: Path) -> None:
    path = tmp_path / "edits.xml"
    write_edit_log(path, ops=5000, seed=11)
    events = list(translate_ops(read_ops(path), "c1"))
    assert [checked(e) for e in events] == [verdict(e) for e in events]
    packer = EventPacker("c1", max_message_bytes=8192, linger_s=10)
    out = [m for e in events for m in packer.add((e,), now=0.0)] + packer.flush()
    assert packer.stats.rejected == 0
    decoded = [e for m in out for e in decode_message(m.wire.body, m.wire.attributes)]
    assert sorted(decoded, key=lambda e: e.key) == events


# Values at and around every limit the contract sets, and the characters its path rules are
# about: the generated checks must refuse what check_event refuses, and nothing else.
def edge_ints(name: str) -> st.SearchStrategy[int]:
    low, high = INT_FIELD_RANGES[name]
    return st.sampled_from([low - 1, low, low + 1, 7, high - 1, high, high + 1, 2**63,
                            -(2**63) - 1])


def maybe(name: str) -> st.SearchStrategy[int | None]:
    return st.none() | edge_ints(name)


component = st.sampled_from(["a", "b", ".", "..", ".h", "..x", "x.", "", "é", "日本", "\0",
                             "\ud800", "a:b", "%s", '"q"', "\\", "\n", "d" * 200, "e" * 255,
                             "f" * 256, "ü" * 128])
path = (st.lists(component, max_size=12).map(lambda parts: "/" + "/".join(parts))
        | st.sampled_from(["/", "", "a/b", "/a/", "//", "/a//b", "/" + "/x" * 130,
                           "/" + "/".join(["y" * 250] * 9)]))
name = st.none() | st.sampled_from(["hdfs", "", "é", "\ud800", "n" * 256, "n" * 257, "ü" * 256])


@settings(max_examples=600, deadline=None)
@given(st.builds(
    HdfsEvent,
    cluster=st.sampled_from(["c1", "c1", "bad name", "x" * 64]),
    txid=edge_ints("txid"), index=edge_ints("index"),
    type=st.sampled_from(EventType), path=path, dst_path=st.none() | path,
    timestamp=maybe("timestamp"), inode_type=st.none() | st.sampled_from(INodeType),
    ctime=maybe("ctime"), replication=maybe("replication"), owner=name, group=name,
    perms=st.none() | st.sampled_from(["0644", "1777", "0999", "644", "07550", "rwxr-xr-x"]),
    symlink_target=st.none() | st.sampled_from(["/t", "t" * 8000, "t" * 8001, "\ud800"]),
    overwrite=st.none() | st.booleans(), block_size=maybe("block_size"),
    size=maybe("size"), new_block=st.none() | st.booleans(),
    metadata_type=st.none() | st.sampled_from(MetadataType),
    mtime=maybe("mtime"), atime=maybe("atime"),
    acls=st.none() | st.lists(st.sampled_from(["user:a:rw-", "default:group::r-x", "x" * 513,
                                               "user:a:rwz", "owner:a:rw-"]),
                              max_size=33).map(tuple),
    xattrs=st.none() | st.lists(st.builds(XAttr, namespace=st.just("USER"), name=st.text(max_size=3),
                                          value=st.none() | st.just("0x31")),
                                max_size=2).map(tuple),
    gap_end_txid=maybe("gap_end_txid"), children_num=maybe("children_num"),
))
@example(HdfsEvent(cluster="c1", txid=5, index=0, type=EventType.GAP, path="/", gap_end_txid=5))
@example(HdfsEvent(cluster="c1", txid=1, index=0, type=EventType.CREATE, path="/a/.."))
@example(HdfsEvent(cluster="c1", txid=1, index=0, type=EventType.RENAME, path="/a"))
def test_refuses_exactly_what_the_contract_refuses_and_writes_its_json(event: HdfsEvent) -> None:
    assert checked(event) == verdict(event)
    if not verdict(event)[0].startswith("refused"):
        # What the agent sends, the consumer's decode reads: no message is quarantined for
        # an event the agent's check let through.
        assert HdfsEvent.from_dict(json.loads(event.to_sparse_json())) == event


@pytest.mark.parametrize("field, value, rule", [
    ("perms", "0999", "field 'perms' must be 4 octal digits, got '0999'"),
    ("perms", "rwxr-xr-x", "field 'perms' must be 4 octal digits"),
    ("acls", ("user:alice:rw-", "user:bob:rwz"), "field 'acls' must hold AclEntry strings"),
])
def test_perms_and_acls_are_held_to_the_patterns_the_consumer_reads_them_by(
        field: str, value: object, rule: str) -> None:
    event = HdfsEvent(**{"cluster": "c1", "txid": 3, "index": 0, "type": EventType.METADATA,
                         "path": "/a/b", "metadata_type": MetadataType.PERMS, field: value})
    for check in (check_event, checked_sparse_json, checked_canonical_json):
        with pytest.raises(EventFormatError, match=rule):
            check(event)
    with pytest.raises(EventFormatError):
        HdfsEvent.from_dict(json.loads(event.to_sparse_json()))


@pytest.mark.parametrize("field, value", [
    ("txid", True), ("size", 1.5), ("path", b"/a"), ("owner", 7), ("overwrite", 1),
    ("type", "CLOSE"), ("type", ["CLOSE"]),
])
def test_a_value_of_another_type_gets_the_contracts_own_json(field: str, value: object) -> None:
    event = HdfsEvent(**{"cluster": "c1", "txid": 3, "index": 0, "type": EventType.CLOSE,
                         "path": "/a/b", "size": 4, "overwrite": False, field: value})
    try:
        expected = verdict(event)
    except TypeError:  # json cannot write bytes: neither may the agent
        for write in (checked_sparse_json, checked_canonical_json):
            with pytest.raises(TypeError):
                write(event)
        return
    assert checked(event) == expected


def test_a_path_cleared_before_clears_only_itself() -> None:
    # Paths the cheap rule cleared are looked up the next time (event_json._paths): the other
    # fields of a later event are still checked, and a cleared path says nothing of another.
    def close(path: object, **fields: object) -> HdfsEvent:
        return HdfsEvent(**{"cluster": "c1", "txid": 3, "index": 0, "type": EventType.CLOSE,
                            "path": path, "size": 4, **fields})

    rename = HdfsEvent(cluster="c1", txid=4, index=0, type=EventType.RENAME, path="/a/b",
                       dst_path="/a/b/../c")
    for event in [close("/a/b"), close("/a/b", size=-1), close("/a/b", txid=True), rename,
                  close("/a/b/../c"), close("/a//b"), close("/a/b")]:
        assert checked(event) == verdict(event), event
    # Past the bound the paths are cleared and noted again, the verdicts the same.
    events = [close(f"/many/f{i}") for i in range(20_000)]
    assert [checked(e) for e in events[::997]] == [verdict(e) for e in events[::997]]
    for event in events:
        checked_sparse_json(event)
    assert [checked(e) for e in events[::997]] == [verdict(e) for e in events[::997]]
    assert 0 < len(event_json._paths) <= 8192


def test_an_owner_or_mode_cleared_before_clears_only_itself() -> None:
    # Owners and groups are looked up like paths (event_json._names), modes in one table.
    def mkdir(**fields: object) -> HdfsEvent:
        return HdfsEvent(**{"cluster": "c1", "txid": 3, "index": 0, "type": EventType.CREATE,
                            "path": "/d", "inode_type": INodeType.DIRECTORY, "timestamp": 5,
                            "ctime": 5, "owner": "alice", "group": "etl", "perms": "0755",
                            **fields})

    for event in [mkdir(), mkdir(group="alice"), mkdir(owner="etl"), mkdir(owner="a" * 257),
                  mkdir(group="\u00e9tl"), mkdir(owner="alice\ud800"), mkdir(perms="755"),
                  mkdir(perms="0955"), mkdir(perms="07555"), mkdir(perms="1777"),
                  mkdir(owner=""), mkdir()]:
        assert checked(event) == verdict(event), event
    events = [mkdir(owner=f"u{i}") for i in range(10_000)]
    for event in events:
        checked_sparse_json(event)
    assert [checked(e) for e in events[::997]] == [verdict(e) for e in events[::997]]
    assert 0 < len(event_json._names) <= 4096


@settings(max_examples=300, deadline=None)
@given(strategies.events)
def test_valid_records_of_every_kind_get_both_forms_exactly(event: HdfsEvent) -> None:
    # Any Unicode in paths and names, int64 values, acls, xattrs, GAP and SNAPSHOT records.
    assert checked(event) == verdict(event)


@settings(max_examples=80, deadline=None)  # each a message of up to 30 events
@given(strategies.ordered_run(), st.booleans())
def test_the_lake_lines_are_the_generic_canonical_json_of_what_was_sent(
        events: list[HdfsEvent], nulls_sent: bool) -> None:
    # What the consumer wrote to the lake before the contract's writer (HdfsEvent.to_json of
    # each checked event), whether the agent sent sparse events or (before sparse) every key.
    body = encode_body([e.to_json() if nulls_sent else e.to_sparse_json() for e in events],
                       compress=False, minor=1)
    decoded = decode_envelope(body)
    assert decoded.events == events
    assert decoded.lines == [e.to_json() for e in events]
