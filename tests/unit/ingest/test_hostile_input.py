"""No input stalls the pipeline: mutation fuzzing of real envelopes and copy requests.

Each example takes the agent's real messages for the bundled edit log (three txid ranges, each
closed by its manifest, messages grouped by top-level path), breaks one message, and delivers
everything to the real consumer. Whatever the break, the consumer never raises (no retry), the
broken message is ingested as valid or quarantined with a bounded reason, every other message
goes through in its group, and the index reaches the end of the last range.

Case counts (hypothesis max_examples, derandomized so CI sees the same cases every run):
ENVELOPE_CASES through the consumer, HANDLER_CASES through the Lambda handler on moto,
MANIFEST_CASES broken manifests through the consumer, COPY_REQUEST_CASES through the copy
request decoder.
"""

from __future__ import annotations

import json

import hypothesis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hdfs_events.copy_request import CopyRequest, CopyRequestError, decode_request
from hdfs_events.envelope import encode_message
from hdfs_events.event import EventType, HdfsEvent, INodeType, MetadataType
from hdfs_events.manifest import manifests_for
from lambdas.ingest import handler
from lambdas.ingest.quarantine import MAX_REASON_CHARS
from lambdas.ingest.sequencer import TXID_DONE, Position
from tests.kit.ingest_builders import three_ranges
from tests.kit.lambda_events import Context, Sent, event
from tests.kit.memory_consumer import in_memory_consumer, queue_message
from tests.unit.ingest.hostile import hostile_values, mutated_body, with_body

ENVELOPE_CASES = 300
HANDLER_CASES = 40
MANIFEST_CASES = 200
COPY_REQUEST_CASES = 500
# Quarantine reasons are cut to MAX_REASON_CHARS plus a note of how much was cut.
REASON_LIMIT = MAX_REASON_CHARS + 40


RANGES = three_ranges()
EVENT_MESSAGES = [s for sent, _ in RANGES for s in sent]
LAST_TXID = 85

fuzz = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.large_base_example,
                                       HealthCheck.function_scoped_fixture])


@settings(fuzz, max_examples=ENVELOPE_CASES)
@given(data=st.data())
def test_any_broken_message_is_quarantined_or_valid_and_nothing_else_waits(data) -> None:
    victim = data.draw(st.integers(0, len(EVENT_MESSAGES) - 1), label="victim")
    broken = with_body(EVENT_MESSAGES[victim], *data.draw(
        mutated_body(EVENT_MESSAGES[victim]), label="mutation"))
    consumer, lake, _ = in_memory_consumer()

    outcomes = {}
    for sent, range_manifests in RANGES:
        for s in [*sent, *range_manifests]:
            message = s if s.dedup_id != broken.dedup_id else broken
            outcomes[s.dedup_id] = consumer.process(queue_message(message))
    report = consumer.apply_ranges(deadline_ms=consumer.clock_ms() + 600_000)["prod"]

    outcome = outcomes.pop(broken.dedup_id)
    hypothesis.event(outcome.status)  # --hypothesis-show-statistics: how many of each
    assert outcome.status in ("ingested", "quarantined")
    if outcome.status == "quarantined":
        assert outcome.reason and len(outcome.reason) <= REASON_LIMIT
        (record,) = lake.quarantined().values()
        assert record["reason"] == outcome.reason and record["body"] == broken.body
    assert {o.status for o in outcomes.values()} <= {"ingested", "manifest"}
    # The index went past the broken message to the end of the last range.
    assert report.waiting_for is None and not report.more, report
    assert report.position == Position(LAST_TXID, TXID_DONE)


@settings(fuzz, max_examples=HANDLER_CASES)
@given(data=st.data())
def test_the_handler_never_raises_never_retries_a_broken_message_nor_delays_other_groups(
        aws, data) -> None:
    victim = data.draw(st.integers(0, len(EVENT_MESSAGES) - 1), label="victim")
    original = EVENT_MESSAGES[victim]
    body, encoding = data.draw(mutated_body(original), label="mutation")
    nonce = data.draw(st.integers(0, 2**62), label="nonce")
    broken = Sent(body=body, encoding=encoding, group_id=original.group_id,
                  dedup_id=f"broken-{nonce}", message_id=f"broken-{nonce}")
    others = [s for s in EVENT_MESSAGES if s.group_id != original.group_id][:3]
    others = [Sent(body=s.body, encoding=s.encoding, group_id=s.group_id,
                   dedup_id=f"{s.dedup_id}-{nonce}", message_id=f"good-{nonce}-{i}")
              for i, s in enumerate(others)]

    response = handler.handler(event(broken, *others), Context())

    assert response == {"batchItemFailures": []}  # nothing retried, whatever the body
    written = json.dumps(aws.lake_keys("raw/"))
    for s in others:  # the other groups went through in the same invocation
        assert f"{s.dedup_id}.jsonl.gz" in written
    quarantined = [k for k in aws.lake_keys("quarantine/") if f"broken-{nonce}" in k]
    if quarantined:
        reason = json.loads(aws.get(quarantined[0]))["reason"]
        assert reason and len(reason) <= REASON_LIMIT


MANIFEST_MESSAGES = [m for _, ms in RANGES for m in ms]


@st.composite
def mutated_manifest(draw: st.DrawFn) -> str:
    doc = json.loads(draw(st.sampled_from(MANIFEST_MESSAGES)).body)
    where = draw(st.sampled_from([*doc, "extra", "text"]))
    if where == "text":
        text = json.dumps(doc)
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.sampled_from(['"', "[" * 50_000, "9" * 6_000, "}",
                                                 "\\ud800"])) + text[at:]
    doc[where] = draw(hostile_values | st.lists(st.text(max_size=200), max_size=5))
    return json.dumps(doc)  # \u escapes: an SQS body holds no lone surrogate itself


@settings(fuzz, max_examples=MANIFEST_CASES)
@given(body=mutated_manifest())
def test_a_broken_manifest_is_quarantined_with_a_reason_or_valid(body: str) -> None:
    consumer, lake, _ = in_memory_consumer()
    first = MANIFEST_MESSAGES[0]
    outcome = consumer.process(queue_message(Sent(
        body=body, encoding=None, group_id=first.group_id, dedup_id="m", kind="manifest")))
    assert outcome.status in ("manifest", "quarantined")
    if outcome.status == "quarantined":
        assert outcome.reason and len(outcome.reason) <= REASON_LIMIT
        (record,) = lake.quarantined().values()
        assert record["reason"] == outcome.reason


COPY_FIELDS = ("v", "request_id", "source", "destination", "mode", "manifest", "notify", "x")
GOOD_REQUEST = {"v": 1, "request_id": "sales-1", "source": "s3://lake-exports/sales/dt=1/",
                "destination": "/data/imports/sales/dt=1", "mode": "update",
                "manifest": [{"key": "sales/dt=1/part-0", "size": 10}]}


@st.composite
def mutated_request(draw: st.DrawFn) -> str:
    doc = json.loads(json.dumps(GOOD_REQUEST))
    where = draw(st.sampled_from([*COPY_FIELDS, "manifest.key", "manifest.size", "text"]))
    value = draw(hostile_values | st.text(st.characters(), max_size=12).map(
        lambda t: "/data/imports/" + t))
    if where == "manifest.key":
        doc["manifest"][0]["key"] = value
    elif where == "manifest.size":
        doc["manifest"][0]["size"] = value
    elif where != "text":
        doc[where] = value
    text = json.dumps(doc, ensure_ascii=False)
    if where == "text":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(['"', "{", "[" * 5_000, "9" * 6_000, "\x00",
                                                 ',"mode":"overwrite"', "\ud800"])) + text[at:]
    return text


@settings(fuzz, max_examples=COPY_REQUEST_CASES)
@given(text=mutated_request())
def test_a_broken_copy_request_is_refused_with_a_reason_naming_the_field(text: str) -> None:
    try:
        request = decode_request(text)
    except CopyRequestError as exc:
        assert exc.field and exc.reason and len(str(exc)) <= 1_000
        return
    # Accepted: it must still be a request nothing can misread.
    assert isinstance(request, CopyRequest)
    parts = request.destination.split("/")
    assert request.destination.startswith("/") and not {"", ".", ".."} & set(parts[1:])
    assert all(ch.isascii() or ch.isalnum() or ch in "-_" for ch in request.destination), \
        request.destination


def _deep_path(depth: int, name: str = "f") -> str:
    return "/" + "/".join(["d" * 250] * depth) + "/" + name


IMPOSSIBLE = {
    # '<cluster>#<parent dir>' over DynamoDB's 2,048-byte partition key
    "index key too long": dict(type=EventType.CREATE, path=_deep_path(9),
                               inode_type=INodeType.FILE),
    # a Number past DynamoDB's 38 digits (and past a Java long)
    "number too large": dict(type=EventType.CLOSE, path="/file_create", size=10**40),
    # an empty entry name: '/a//b' and '/a/' have one
    "empty key": dict(type=EventType.CREATE, path="/data//x", inode_type=INodeType.DIRECTORY),
    # an entry over DynamoDB's 400 KB item
    "item too large": dict(type=EventType.METADATA, path="/file_create",
                           metadata_type=MetadataType.OWNER, owner="o" * 500_000, group="g"),
}


@pytest.mark.parametrize("impossible", IMPOSSIBLE.values(), ids=IMPOSSIBLE)
def test_a_range_with_an_event_the_index_cannot_store_is_passed_and_the_index_reaches_the_end(
        impossible: dict) -> None:
    """A buggy or hostile agent puts, in the second of three ranges, a message whose event the
    namespace index could never store. It is quarantined when read, its range goes on without
    it, and the good ranges after it are applied: the index reaches the end."""
    consumer, _, store = in_memory_consumer()
    bad_event = HdfsEvent(cluster="prod", txid=30, index=0, timestamp=1_421_135_800_000,
                          **impossible)
    # encode_message serialises; it does not check (the agent's packer does, decode does).
    wire = encode_message([bad_event], group_id="prod:/impossible")
    bad = Sent(body=wire.body, encoding="gzip+base64", group_id=wire.group_id,
               dedup_id=wire.dedup_id, message_id="impossible")
    (first, first_manifests), (second, _), (third, third_manifests) = RANGES
    second = [*second, bad]
    second_manifests = [Sent(body=m.to_json(), encoding=None, group_id=m.group_id,
                             dedup_id=m.dedup_id, kind="manifest")
                        for m in manifests_for("prod", 23, 57, [s.dedup_id for s in second])]
    outcomes = [consumer.process(queue_message(s)) for s in
                [*first, *first_manifests, *second, *second_manifests, *third,
                 *third_manifests]]

    report = consumer.apply_ranges(deadline_ms=consumer.clock_ms() + 600_000)["prod"]

    quarantined = [o for o in outcomes if o.status == "quarantined"]
    assert len(quarantined) == 1 and quarantined[0].reason.startswith("event 0: field '")
    assert report.position == Position(LAST_TXID, TXID_DONE) and report.skipped_messages == 1
    # The last range's changes are in the index: the concat target's final METADATA (txid 85).
    live = store.live("prod")
    assert "/file_concat_target" in live and "/hard-lease-recovery-test" in live
    # Nothing of the impossible event: not its path, not its values.
    assert impossible["path"] == "/file_create" or impossible["path"] not in live
    assert not any("d" * 250 in p for p in live)
    assert impossible.get("size", 0) not in live["/file_create"].values()
    assert impossible.get("owner", "") not in live["/file_create"].values()
