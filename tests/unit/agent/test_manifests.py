"""ManifestBuilder: the chain of txid ranges and the messages each one names."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdfs_events.manifest import MAX_MESSAGES_PER_MANIFEST, decode_manifest, is_manifest
from onprem_agent.checkpoint import CheckpointTracker
from onprem_agent.manifests import ManifestBuilder, manifest_message
from tests.unit.agent.chain import check_chain

C = "prod"


def ack_all(builder: ManifestBuilder, manifests) -> None:
    for m in manifests:
        builder.manifest_acknowledged(m)


def test_nothing_is_due_before_a_safe_txid() -> None:
    builder = ManifestBuilder(C)
    assert builder.due(None) == [] and builder.acknowledged_end is None


def test_ranges_follow_each_other_and_the_checkpoint_follows_their_acknowledgement() -> None:
    builder = ManifestBuilder(C)
    builder.acknowledged("m1", 1, 3)
    [first] = builder.due(3)
    assert (first.after, first.end, first.messages) == (None, 3, ("m1",))
    assert builder.acknowledged_end is None  # sent, not acknowledged
    builder.manifest_acknowledged(first)
    assert builder.acknowledged_end == 3
    builder.acknowledged("m2", 5, 5)
    [second] = builder.due(7)
    assert (second.after, second.end, second.messages) == (3, 7, ("m2",))
    builder.manifest_acknowledged(second)
    assert builder.acknowledged_end == 7


def test_a_message_straddling_the_end_is_named_by_both_ranges_and_then_dropped() -> None:
    builder = ManifestBuilder(C)
    builder.acknowledged("a", 2, 9, txids=[2, 9])  # its group's events at txids 2 and 9
    builder.acknowledged("b", 3, 4)
    [first] = builder.due(5)  # txid 6..8 of other groups not acknowledged yet
    assert first.messages == ("a", "b")
    ack_all(builder, [first])
    assert builder.held_messages == 1  # "a" holds txid 9, past the end
    builder.acknowledged("c", 6, 8)
    [second] = builder.due(9)
    assert (second.after, second.end, second.messages) == (5, 9, ("a", "c"))
    ack_all(builder, [second])
    assert builder.held_messages == 0
    [third] = builder.due(10)
    assert third.messages == ()


def test_a_range_between_two_txids_of_a_message_does_not_name_it() -> None:
    builder = ManifestBuilder(C)
    builder.acknowledged("a", 2, 20, txids=[2, 20])
    ack_all(builder, builder.due(5))
    [between] = builder.due(12)
    assert between.messages == ()
    ack_all(builder, [between])
    [last] = builder.due(20)
    assert last.messages == ("a",)


def test_without_txids_a_message_is_named_by_every_range_its_span_overlaps() -> None:
    builder = ManifestBuilder(C)
    builder.acknowledged("a", 2, 20)
    names = []
    for safe in (5, 12, 20):
        [m] = builder.due(safe)
        names.append(m.messages)
        ack_all(builder, [m])
    assert names == [("a",), ("a",), ("a",)]


def test_an_empty_range_still_gets_a_manifest() -> None:
    builder = ManifestBuilder(C, after=40)
    [m] = builder.due(45)  # txids 41..45 held no events (block allocations)
    assert (m.after, m.end, m.messages, m.parts) == (40, 45, (), 1)


def test_a_resumed_chain_starts_at_the_checkpoint() -> None:
    builder = ManifestBuilder(C, after=100)
    assert builder.acknowledged_end == 100
    assert builder.due(100) == [] and builder.due(99) == []
    builder.acknowledged("x", 101, 101)
    [m] = builder.due(101)
    assert (m.after, m.end, m.messages) == (100, 101, ("x",))


def test_only_one_range_is_outstanding_until_all_its_parts_are_acknowledged() -> None:
    builder = ManifestBuilder(C)
    ids = [f"m{i:04d}" for i in range(MAX_MESSAGES_PER_MANIFEST + 5)]
    for i, dedup_id in enumerate(ids):
        builder.acknowledged(dedup_id, i + 1, i + 1)
    parts = builder.due(len(ids))
    assert [(p.part, p.parts) for p in parts] == [(0, 2), (1, 2)]
    assert sorted(i for p in parts for i in p.messages) == ids  # each named once
    assert len({p.range_id for p in parts}) == 1
    builder.acknowledged("late", len(ids) + 1, len(ids) + 1)
    assert builder.due(len(ids) + 1) == []  # the previous range is outstanding
    builder.manifest_acknowledged(parts[1])
    assert builder.due(len(ids) + 1) == [] and builder.acknowledged_end is None
    builder.manifest_acknowledged(parts[0])
    assert builder.acknowledged_end == len(ids)
    [nxt] = builder.due(len(ids) + 1)
    assert (nxt.after, nxt.messages) == (len(ids), ("late",))


def test_nothing_new_to_close_gives_nothing() -> None:
    builder = ManifestBuilder(C)
    ack_all(builder, builder.due(7))
    assert builder.due(7) == []


def test_an_acknowledgement_of_a_manifest_not_outstanding_is_refused() -> None:
    builder = ManifestBuilder(C)
    [m] = builder.due(3)
    builder.manifest_acknowledged(m)
    with pytest.raises(ValueError, match=r"\(None, 3\] part 0, which is not outstanding"):
        builder.manifest_acknowledged(m)


def test_consecutive_empty_ranges_share_a_range_id_and_are_still_two_ranges() -> None:
    # The flaky chain check of test_pipeline_manifests (1 run in 3): txids 25..33 without
    # events, cut at two checkpoint intervals, gave (24, 32] and (32, 33], both naming nothing.
    builder = ManifestBuilder(C, after=24)
    [first] = builder.due(32)
    ack_all(builder, [first])
    [second] = builder.due(33)
    ack_all(builder, [second])
    assert first.range_id == second.range_id and first.dedup_id != second.dedup_id
    ranges = check_chain([first, second], {}, start=24, end=33)
    assert [(r.after, r.end) for r in ranges] == [(24, 32), (32, 33)]


def test_consecutive_ranges_naming_one_straddling_message_are_two_ranges() -> None:
    builder = ManifestBuilder(C, after=31)
    builder.acknowledged("a", 32, 33, txids=[32, 33])
    [first] = builder.due(32)
    ack_all(builder, [first])
    [second] = builder.due(33)
    assert first.messages == second.messages == ("a",) and first.range_id == second.range_id
    ranges = check_chain([first, second], {"a": [32, 33]}, start=31, end=33)
    assert [(r.after, r.end, r.messages) for r in ranges] == [
        (31, 32, frozenset({"a"})), (32, 33, frozenset({"a"}))]


def test_the_chain_check_refuses_a_part_sent_twice() -> None:
    builder = ManifestBuilder(C, after=31)
    builder.acknowledged("a", 32, 32)
    [m] = builder.due(32)
    with pytest.raises(AssertionError, match=r"part 0 of range \(31, 32\] sent twice"):
        check_chain([m, m], {"a": [32]}, start=31, end=32)


def test_a_manifest_message_carries_the_manifest_in_its_own_group() -> None:
    builder = ManifestBuilder(C, after=10)
    builder.acknowledged("prod-11.0-12.1-3", 11, 12)
    [m] = builder.due(12)
    message = manifest_message(m)
    assert message.txids == () and message.manifest == m and message.wire.event_count == 0
    assert is_manifest(message.wire.attributes)
    assert message.wire.group_id == "prod:#manifest" and message.wire.dedup_id == m.dedup_id
    assert decode_manifest(message.wire.body) == m


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_any_order_of_acknowledgements_gives_a_chain_naming_exactly_each_ranges_messages(
        data) -> None:
    """Messages of a few groups (each a run of increasing txids) acknowledged in any order,
    manifests due and acknowledged at any moment: the ranges still chain from the start to
    the last txid and name exactly the messages with an event in each."""
    last = data.draw(st.integers(1, 24))
    groups = data.draw(st.lists(st.lists(st.integers(1, last), min_size=1, max_size=10,
                                         unique=True), min_size=1, max_size=6))
    messages: dict[str, list[int]] = {}
    for g, txids in enumerate(groups):
        txids.sort()
        cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(txids) - 1)), max_size=3)))
        for i, (a, b) in enumerate(zip([0, *cuts], [*cuts, len(txids)], strict=True)):
            if txids[a:b]:
                messages[f"g{g}-m{i}"] = txids[a:b]
    tracker = CheckpointTracker()
    for dedup_id, txids in messages.items():  # each opened once the txid before it finished
        tracker.sent(dedup_id, after=txids[0] - 1 if txids[0] > 1 else None)
    tracker.finished = last
    builder, sent, outstanding = ManifestBuilder(C), [], []
    for dedup_id in data.draw(st.permutations(sorted(messages))):
        txids = messages[dedup_id]
        tracker.acknowledged(dedup_id)
        builder.acknowledged(dedup_id, txids[0], txids[-1], txids=txids)
        if data.draw(st.booleans()):
            ack_all(builder, outstanding)
            outstanding = []
        if data.draw(st.integers(0, 3)):  # mostly: ranges closed often, many boundaries
            due = builder.due(tracker.safe_txid())
            sent += due
            outstanding += due
    while builder.acknowledged_end != last:
        ack_all(builder, outstanding)
        outstanding = builder.due(tracker.safe_txid())
        sent += outstanding
    check_chain(sent, messages, start=None, end=last)
