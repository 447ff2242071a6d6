"""The SQS envelope: round trips, the 1 MiB limit, and decode errors that say what is wrong."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdfs_events.envelope import (
    ENCODING_GZIP,
    ENCODING_JSON,
    MAX_DECODED_BYTES,
    SQS_MAX_MESSAGE_BYTES,
    EnvelopeError,
    MessageTooLarge,
    decode_envelope,
    decode_message,
    encode_message,
)
from hdfs_events.event import EventType, HdfsEvent
from hdfs_events.ids import deduplication_id
from tests.unit.contract.strategies import ordered_run


def lambda_shape(attributes: dict) -> dict:
    """Message attributes as an SQS event source hands them to Lambda."""
    return {name: {"stringValue": a["StringValue"], "dataType": a["DataType"]}
            for name, a in attributes.items()}


@settings(max_examples=150, deadline=None)
@given(ordered_run(), st.booleans())
def test_round_trip_with_and_without_compression(events: list[HdfsEvent], compress: bool) -> None:
    message = encode_message(events, group_id="c1:/data", compress=compress)
    assert decode_message(message.body, message.attributes) == events
    assert decode_message(message.body, lambda_shape(message.attributes)) == events
    assert message.event_count == len(events)
    assert (message.first, message.last) == ((events[0].txid, events[0].index),
                                             (events[-1].txid, events[-1].index))
    assert message.dedup_id == deduplication_id("c1", message.first, message.last, len(events))
    assert message.attributes["encoding"]["StringValue"] == (
        ENCODING_GZIP if compress else ENCODING_JSON)
    message.body.encode("utf-8")  # SQS bodies are text; base64 keeps gzip text-safe


def event(i: int, path: str = "/data/x") -> HdfsEvent:
    return HdfsEvent(cluster="c1", txid=i, index=0, type=EventType.UNLINK, path=path,
                     timestamp=1_700_000_000_000 + i)


def test_the_size_counts_body_and_attributes_and_stays_under_1_mib() -> None:
    message = encode_message([event(1)], group_id="g", compress=False)
    assert message.size == len(message.body.encode()) + len("encoding") + len("String") + len(
        "json")
    assert message.billed_requests == 1


def test_a_message_over_1_mib_is_refused_with_its_size() -> None:
    # ~4 KB paths of incompressible-ish text make ~300 events exceed 1 MiB uncompressed.
    big = [event(i, "/data/" + f"{i:08d}" * 500) for i in range(300)]
    with pytest.raises(MessageTooLarge, match=str(SQS_MAX_MESSAGE_BYTES)):
        encode_message(big, group_id="g", compress=False)
    fits = encode_message(big, group_id="g", compress=True)  # gzip makes it fit
    assert fits.size <= SQS_MAX_MESSAGE_BYTES


def test_a_message_holds_one_cluster_and_at_least_one_event() -> None:
    with pytest.raises(ValueError, match="one cluster"):
        encode_message([event(1), HdfsEvent(cluster="c2", txid=2, index=0,
                                             type=EventType.UNLINK, path="/a")], group_id="g")
    with pytest.raises(ValueError, match="at least one"):
        encode_message([], group_id="g")


def gz(text: str) -> str:
    # mtime=0: a gzip header holds its writing time, and these bodies name parametrized tests,
    # whose ids must be the same in every pytest-xdist worker.
    return base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode()


GZ = {"encoding": {"StringValue": ENCODING_GZIP, "DataType": "String"}}
JS = {"encoding": {"StringValue": ENCODING_JSON, "DataType": "String"}}
GOOD = json.loads(encode_message([event(1)], group_id="g", compress=False).body)


@pytest.mark.parametrize(("body", "attributes", "says"), [
    (json.dumps({"v": 2, "events": GOOD["events"]}), JS, "unsupported envelope version 2"),
    (json.dumps({"v": True, "events": GOOD["events"]}), JS, "unsupported envelope version"),
    (json.dumps({"events": GOOD["events"]}), None, "unsupported envelope version None"),
    ("not base64 !!", GZ, "not valid base64"),
    (base64.b64encode(b"plain text, not gzip").decode(), GZ, "not valid gzip"),
    (base64.b64encode(gzip.compress(json.dumps(GOOD).encode(), mtime=0)[:-12]).decode(), GZ,
     "truncated"),
    (gz("{not json"), GZ, "not JSON"),
    ("{not json", JS, "not JSON"),
    ("[1, 2]", JS, "must be a JSON object"),
    (json.dumps({"v": 1, "events": {"a": 1}}), JS, "'events' must be a non-empty list"),
    (json.dumps({"v": 1, "events": []}), JS, "'events' must be a non-empty list"),
    (json.dumps({"v": 1, "events": GOOD["events"], "extra": 1}), JS, "unknown envelope field"),
    (json.dumps({"v": 1, "events": [{**GOOD["events"][0], "txid": "1"}]}), JS,
     "event 0: field 'txid' must be int"),
    (json.dumps({"v": 1, "events": [GOOD["events"][0], {"cluster": "c1"}]}), JS,
     "event 1: missing required field 'txid'"),
    (json.dumps(GOOD), {"encoding": {"StringValue": "zstd"}}, "unknown encoding attribute 'zstd'"),
    (json.dumps(GOOD), {"encoding": {"BinaryValue": b"x"}}, "has no string value"),
    (base64.b64encode(gzip.compress(b"\xff\xfe" * 10, mtime=0)).decode(), GZ, "not UTF-8"),
])
def test_decode_errors_name_what_is_wrong(body: str, attributes: dict | None, says: str) -> None:
    with pytest.raises(EnvelopeError, match=_re(says)):
        decode_message(body, attributes)


def _re(text: str) -> str:
    import re

    return re.escape(text)


def test_a_gzip_bomb_is_refused_before_it_reaches_memory() -> None:
    bomb = base64.b64encode(gzip.compress(b" " * (MAX_DECODED_BYTES + 1024), 9)).decode()
    assert len(bomb) < SQS_MAX_MESSAGE_BYTES
    with pytest.raises(EnvelopeError, match="expands past"):
        decode_message(bomb, GZ)


def test_a_body_over_the_sqs_limit_is_refused() -> None:
    with pytest.raises(EnvelopeError, match="1 MiB"):
        decode_message(" " * (SQS_MAX_MESSAGE_BYTES + 1), JS)


def test_lambda_shaped_attributes_and_missing_attributes() -> None:
    message = encode_message([event(5)], group_id="g", compress=True)
    assert decode_message(message.body, {"encoding": {"stringValue": ENCODING_GZIP,
                                                      "dataType": "String"}}) == [event(5)]
    plain = encode_message([event(6)], group_id="g", compress=False)
    assert decode_message(plain.body, None) == [event(6)]  # no attribute: plain JSON
    assert decode_message(plain.body, {}) == [event(6)]


# --- versions (docs/contract.md, "Versions") ----------------------------------------------------

def _event_doc(**extra: object) -> dict:
    event = HdfsEvent("c1", 7, 0, EventType.UNLINK, "/a", timestamp=1_700_000_000_000)
    return {**event.to_dict(), **extra}


def test_todays_writer_leaves_minor_out_and_reads_as_minor_0() -> None:
    message = encode_message([HdfsEvent.from_dict(_event_doc())], group_id="c1:/a",
                             compress=False)
    assert json.loads(message.body).keys() == {"v", "events"}
    decoded = decode_envelope(message.body)
    assert decoded.version == (1, 0) and decoded.unknown_envelope == {}
    assert decoded.lines == [HdfsEvent.from_dict(_event_doc()).to_json()]


def test_a_newer_minor_keeps_its_fields_after_the_canonical_event() -> None:
    body = json.dumps({"v": 1, "minor": 3, "trace": [1, "x"],
                       "events": [_event_doc(storage_policy="HOT", tags={"a": None})]})
    decoded = decode_envelope(body)
    known = HdfsEvent.from_dict(_event_doc())
    assert decoded.events == [known] and decoded.version == (1, 3)
    assert decoded.lines == [known.to_json()[:-1] + ',"storage_policy":"HOT","tags":{"a":null}}']
    assert decoded.unknown_envelope == {"trace": [1, "x"]}


@pytest.mark.parametrize(("doc", "says"), [
    ({"v": 1, "minor": "1"}, "envelope field 'minor' must be an integer >= 0, got '1'"),
    ({"v": 1, "minor": -1}, "envelope field 'minor' must be an integer >= 0, got -1"),
    ({"v": 1, "minor": 0, "trace": 1}, "unknown envelope field(s) ['trace'] in minor 0"),
    # A newer minor's known fields are still checked, and nested objects stay closed.
    ({"v": 1, "minor": 2, "events": [_event_doc(txid="7")]}, "event 0: field 'txid'"),
    ({"v": 1, "minor": 2, "events": [_event_doc(
        type="METADATA", metadata_type="XATTRS", xattrs_removed=False,
        xattrs=[{"namespace": "USER", "name": "k", "value": None, "flag": 1}])]},
     "unknown xattr field(s) ['flag']"),
    ({"v": 1, "minor": 2, "trace": "x" * 2_000}, "take over 2000 bytes as JSON"),
    ({"v": 2}, "unsupported envelope version 2; this reader knows major(s) [1]; a newer major"),
])
def test_version_rules_name_the_field(doc: dict, says: str) -> None:
    with pytest.raises(EnvelopeError) as caught:
        decode_envelope(json.dumps({"events": [_event_doc()], **doc}))
    assert says in str(caught.value)
