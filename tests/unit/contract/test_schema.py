"""The JSON Schemas and the code agree, both ways."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from hdfs_events import schema
from hdfs_events.envelope import EnvelopeError, decode_envelope, decode_message, encode_message
from hdfs_events.event import FIELDS, REQUIRED, EventFormatError, EventType, HdfsEvent, INodeType
from onprem_agent.editlog import read_ops
from onprem_agent.translate import translate_ops
from tests.kit.workload import write_edit_log
from tests.unit.contract.strategies import events

EVENT = schema.validator("event")
ENVELOPE = schema.validator("envelope")
SPARSE_EVENT = EVENT.evolve(schema={"$ref": f"{schema.EVENT_SCHEMA_ID}#/$defs/sparse"})


def valid_event() -> dict[str, Any]:
    return HdfsEvent.from_dict({"cluster": "c1", "txid": 7, "index": 0, "type": "CREATE",
                                "path": "/a", "inode_type": "FILE", "perms": "0644",
                                "acls": ["user::rw-"], "xattrs": [
                                    {"namespace": "USER", "name": "k", "value": "0x01"}]}
                               ).to_dict()


def test_schema_properties_are_exactly_the_event_fields_in_order() -> None:
    doc = schema.load("event")
    fields = doc["$defs"]["fields"]
    assert tuple(fields["properties"]) == FIELDS
    assert tuple(doc["required"]) == FIELDS  # canonical form (the lake): every key present
    assert tuple(fields["required"]) == REQUIRED  # the wire's sparse form leaves nulls out
    assert doc["$ref"] == "#/$defs/fields" and doc["unevaluatedProperties"] is False
    assert set(REQUIRED) <= set(FIELDS)


def test_schemas_are_valid_draft_2020_12() -> None:
    from jsonschema import Draft202012Validator

    for name in ("event", "envelope"):
        Draft202012Validator.check_schema(schema.load(name))
        assert schema.load(name)["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_every_translated_event_validates(edits_sample: Path, tmp_path: Path) -> None:
    path = tmp_path / "edits.xml"
    write_edit_log(path, ops=4000, seed=3, mass_delete=20)
    for log in (edits_sample, path):
        for event in translate_ops(read_ops(log), "c1"):
            doc = json.loads(event.to_json())
            EVENT.validate(doc)
            assert HdfsEvent.from_dict(doc) == event


@settings(max_examples=300, deadline=None)
@given(events)
def test_every_event_to_dict_validates_and_round_trips(event: HdfsEvent) -> None:
    doc = json.loads(event.to_json())
    EVENT.validate(doc)
    assert list(doc) == list(FIELDS)
    assert HdfsEvent.from_dict(doc) == event


def test_an_encoded_envelope_validates(edits_sample: Path) -> None:
    evs = list(translate_ops(read_ops(edits_sample), "c1"))
    message = encode_message(evs, group_id="g", compress=False)
    body = json.loads(message.body)
    ENVELOPE.validate(body)
    assert all(None not in e.values() for e in body["events"])  # sparse: no null field
    assert decode_message(message.body, message.attributes) == evs


def test_an_envelope_from_an_agent_that_sends_nulls_validates_and_decodes_alike(
        edits_sample: Path) -> None:
    # Agents before sparse events wrote every key; a consumer must read both during an upgrade.
    evs = list(translate_ops(read_ops(edits_sample), "c1"))
    with_nulls = {"v": 1, "events": [e.to_dict() for e in evs]}
    sparse = encode_message(evs, group_id="g", compress=False).body
    ENVELOPE.validate(with_nulls)
    # The same events, and the same lines in the lake (the canonical form, every key).
    for body in (json.dumps(with_nulls), sparse):
        decoded = decode_envelope(body)
        assert decoded.events == evs
        assert decoded.lines == [e.to_json() for e in evs]


def test_a_directory_snapshot_says_its_children_in_minor_1_and_reads_without_them_as_before(
        ) -> None:
    # Minor 1 added children_num (the consumer shards a crowded directory from it); a message
    # without it keeps minor 0's bytes, which consumers deployed before minors read.
    listed = HdfsEvent("c1", 9, 0, EventType.SNAPSHOT, "/d", timestamp=1_700_000_000_000,
                       inode_type=INodeType.DIRECTORY, owner="etl", group="hadoop",
                       perms="0755", mtime=5, atime=5, children_num=150)
    with_count = json.loads(encode_message([listed], group_id="g", compress=False).body)
    assert with_count["minor"] == 1 and with_count["events"][0]["children_num"] == 150
    unknown = replace(listed, children_num=None)
    without = json.loads(encode_message([unknown], group_id="g", compress=False).body)
    assert without.keys() == {"v", "events"} and "children_num" not in without["events"][0]
    for body, event in ((with_count, listed), (without, unknown)):
        ENVELOPE.validate(body)
        decoded = decode_envelope(json.dumps(body))
        assert decoded.events == [event] and decoded.lines == [event.to_json()]
    assert decode_envelope(json.dumps(with_count)).version == (1, 1)
    assert json.loads(unknown.to_json())["children_num"] is None  # the lake's line: null
    for bad in (-1, 2**31, "150"):
        assert list(EVENT.iter_errors({**listed.to_dict(), "children_num": bad}))
        with pytest.raises((EventFormatError, EnvelopeError)):
            decode_envelope(json.dumps({**with_count, "events": [
                {**with_count["events"][0], "children_num": bad}]}))


def _broken(change: str) -> dict[str, Any]:
    doc = valid_event()
    kind, _, name = change.partition(":")
    if kind == "drop":
        del doc[name]
    elif kind == "unknown":
        doc["colour"] = "blue"
    else:
        value = json.loads(name.split("=", 1)[1])
        field = name.split("=", 1)[0]
        if field.startswith("xattrs."):
            doc["xattrs"] = [dict(doc["xattrs"][0], **{field[7:]: value})]
        else:
            doc[field] = value
    return doc


INVALID = [
    *(f"drop:{name}" for name in REQUIRED),
    "unknown:",
    'set:txid="7"', "set:txid=true", "set:txid=-1", "set:index=-2", "set:index=1.5",
    'set:cluster=7', "set:path=null", "set:path=[]", 'set:type="create"', 'set:type="MKDIR"',
    'set:inode_type="DIR"', 'set:metadata_type="SIZE"', 'set:timestamp="1"', "set:size=true",
    'set:overwrite="true"', "set:overwrite=1", 'set:perms="644"', 'set:perms="0648"',
    "set:perms=420", 'set:acls="user::rw-"', "set:acls=[1]", 'set:acls=["user:rw-"]',
    'set:acls=["admin::rwx"]', 'set:xattrs={"namespace":"USER"}', "set:xattrs=[1]",
    'set:xattrs.namespace="user"', "set:xattrs.name=null", "set:xattrs.value=5",
    'set:xattrs.extra="x"', "set:replication=3.5", "set:gap_end_txid=-1",
    'set:gap_end_txid="9"',
]


@pytest.mark.parametrize("change", INVALID)
def test_invalid_objects_are_rejected_by_schema_and_code(change: str) -> None:
    doc = _broken(change)
    assert list(EVENT.iter_errors(doc)), f"schema accepted {change}"
    with pytest.raises(EventFormatError):
        HdfsEvent.from_dict(copy.deepcopy(doc))


@pytest.mark.parametrize(("record", "schema_sees_it"), [
    ({"type": "GAP"}, True),
    ({"type": "GAP", "gap_end_txid": None}, True),
    ({"type": "SNAPSHOT", "inode_type": None}, True),
    ({"type": "GAP", "gap_end_txid": 7}, False),  # not after txid 7: only the code can tell
])
def test_agent_records_without_their_own_fields_are_rejected(record, schema_sees_it) -> None:
    doc = {**valid_event(), "gap_end_txid": None, **record}
    assert bool(list(EVENT.iter_errors(doc))) is schema_sees_it
    with pytest.raises(EventFormatError, match=r"GAP|SNAPSHOT"):
        HdfsEvent.from_dict(doc)


def test_a_gap_and_a_snapshot_round_trip() -> None:
    gap = {**valid_event(), "type": "GAP", "path": "/", "inode_type": None, "perms": None,
           "acls": None, "xattrs": None, "gap_end_txid": 90}
    snap = {**valid_event(), "type": "SNAPSHOT", "size": 12, "mtime": 5, "atime": 4}
    for doc in (gap, snap):
        EVENT.validate(doc)
        assert HdfsEvent.from_dict(doc).to_dict() == doc


def test_the_sparse_form_omits_nulls_and_only_the_canonical_form_needs_every_key() -> None:
    # The wire carries an event without its null keys; the lake's line (the schema's root,
    # the canonical form) has them all; readers take both.
    doc = {k: v for k, v in valid_event().items() if v is not None}
    assert json.loads(HdfsEvent.from_dict(doc).to_sparse_json()) == doc
    assert list(EVENT.iter_errors(doc))
    assert not list(SPARSE_EVENT.iter_errors(doc))
    assert HdfsEvent.from_dict(doc).to_dict() == valid_event()


@pytest.mark.parametrize("body", [
    {"v": 2, "events": [None]}, {"v": 1, "events": []}, {"v": 1}, {"events": []},
    {"v": 1, "events": [{}]}, {"v": 1, "events": {}}, {"v": "1", "events": []},
    {"v": 1, "events": [], "x": 1}, {"v": 1, "minor": 0, "events": [None], "x": 1},
    {"v": 1, "minor": -1, "events": [None]}, {"v": 1, "minor": True, "events": [None]},
    {"v": 2, "minor": 0, "events": [None]},
])
def test_invalid_envelopes_are_rejected_by_schema_and_code(body: dict[str, Any]) -> None:
    from hdfs_events.envelope import EnvelopeError

    if body.get("events") == [None]:
        body["events"] = [valid_event()]
    assert list(ENVELOPE.iter_errors(body))
    with pytest.raises(EnvelopeError):
        decode_message(json.dumps(body), {"encoding": {"StringValue": "json",
                                                       "DataType": "String"}})


def newer_minor_event() -> dict[str, Any]:
    return {**valid_event(), "storage_policy": "HOT"}


def test_a_newer_minor_with_new_fields_is_accepted_by_schema_and_code() -> None:
    body = {"v": 1, "minor": 2, "events": [newer_minor_event()], "trace": {"id": "t1"}}
    assert not list(ENVELOPE.iter_errors(body))
    assert decode_message(json.dumps(body)) == [HdfsEvent.from_dict(valid_event())]


@pytest.mark.parametrize("body", [
    {"v": 1, "events": [None]},  # minor 0 (absent) has no field past the contract's
    {"v": 1, "minor": 0, "events": [None]},
    {"v": 1, "minor": 2, "events": [{"txid": "7"}]},  # a known field of the wrong type
])
def test_new_fields_need_a_newer_minor_and_known_ones_stay_checked(body: dict[str, Any]) -> None:
    from hdfs_events.envelope import EnvelopeError

    body["events"] = [newer_minor_event() if e is None else {**newer_minor_event(), **e}
                      for e in body["events"]]
    assert list(ENVELOPE.iter_errors(body))
    with pytest.raises(EnvelopeError):
        decode_message(json.dumps(body))
