"""A manifest the consumer cannot read does not hold its cluster's index up for good.

The agent's manifests travel in one FIFO group per cluster, so SQS hands them over in order: when
the cluster's own manifest was quarantined and a later range's manifest is stored, the missing
range is the lost one. The index passes it (reported, alarmed: its events are in the lake, not
in the index) and goes on. A manifest that is merely late (or in the DLQ, where it can be
redriven) is still waited for, and another principal's broken manifest passes nothing.
"""

from __future__ import annotations

from hdfs_events.manifest import Manifest
from lambdas.ingest.sequencer import TXID_DONE, ApplyReport, Position
from tests.kit.ingest_builders import three_ranges
from tests.kit.lambda_events import Sent
from tests.kit.memory_consumer import in_memory_consumer, queue_message


def deliver(messages: list[Sent], *, broken: str | None = None,
            sender_of_broken: str | None = None) -> ApplyReport:
    """Everything in order through the real consumer, the manifest `broken` (a dedup id) with
    an unreadable body; then ranges applied once."""
    consumer, _, _ = in_memory_consumer()
    for s in messages:
        if s.dedup_id == broken:
            damaged = Sent(body=s.body[: len(s.body) // 2], encoding=None, group_id=s.group_id,
                           dedup_id=s.dedup_id, kind="manifest")
            assert consumer.process(queue_message(
                damaged, sender_id=sender_of_broken)).status == "quarantined"
        else:
            consumer.process(queue_message(s))
    return consumer.apply_ranges(deadline_ms=consumer.clock_ms() + 600_000)["prod"]


def in_order(rs: list[tuple[list[Sent], list[Sent]]]) -> list[Sent]:
    return [s for sent, ms in rs for s in [*sent, *ms]]


def test_a_range_whose_manifest_was_quarantined_is_passed_and_the_index_reaches_the_end() -> None:
    rs = three_ranges()
    (lost,) = rs[1][1]

    report = deliver(in_order(rs), broken=lost.dedup_id)

    assert report.position == Position(85, TXID_DONE)
    assert report.waiting_for is None
    ((what, reason),) = report.bridged
    assert what.startswith("txids (23, 57]: manifest lost")
    assert "manifest" in reason  # the quarantine's own reason, for the operator


def test_a_late_manifest_is_waited_for_and_then_applied() -> None:
    rs = three_ranges()
    late = rs[1][1][0]
    consumer, _, _ = in_memory_consumer()
    for s in in_order(rs):
        if s is not late:
            consumer.process(queue_message(s))

    waiting = consumer.apply_ranges(deadline_ms=consumer.clock_ms() + 600_000)["prod"]
    assert waiting.position == Position(23, TXID_DONE) and not waiting.bridged
    assert waiting.waiting_for == "the manifest of txid 24"

    consumer.process(queue_message(late))
    done = consumer.apply_ranges(deadline_ms=consumer.clock_ms() + 600_000)["prod"]
    assert done.position == Position(85, TXID_DONE) and not done.bridged


def test_another_principals_broken_manifest_passes_no_range() -> None:
    rs = three_ranges()
    (lost,) = rs[1][1]

    report = deliver(in_order(rs), broken=lost.dedup_id, sender_of_broken="AIDAOTHERCLUSTER0001")

    assert report.position == Position(23, TXID_DONE) and not report.bridged
    assert report.waiting_for == "the manifest of txid 24"


def test_a_range_missing_one_manifest_part_applies_the_parts_present() -> None:
    rs = three_ranges()
    sent = rs[1][0]
    half = len(sent) // 2
    parts = [Manifest("prod", 23, 57, tuple(sorted(ids)), part=i, parts=2, range_id="r2")
             for i, ids in enumerate(([s.dedup_id for s in sent[:half]],
                                      [s.dedup_id for s in sent[half:]]))]
    as_sent = [Sent(body=m.to_json(), encoding=None, group_id=m.group_id,
                    dedup_id=m.dedup_id, kind="manifest") for m in parts]
    rs[1] = (sent, as_sent)

    report = deliver(in_order(rs), broken=as_sent[1].dedup_id)

    assert report.position == Position(85, TXID_DONE)
    ((what, _),) = report.bridged
    assert what == ("txids (23, 57]: 1 of 2 manifest parts lost, their messages not indexed")

