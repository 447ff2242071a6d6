"""The checkpoint: the tracker's T, and the file and DynamoDB stores."""

from __future__ import annotations

import json
import random
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from hdfs_events.names import STATE_ITEM_CHECKPOINT, STATE_PK, STATE_SK
from onprem_agent.checkpoint import (
    CheckpointError,
    CheckpointTracker,
    DynamoCheckpointStore,
    FileCheckpointStore,
)


def test_a_txid_split_over_two_messages_waits_for_both_in_either_order() -> None:
    # txid 10's three events went out in two messages: A (10/0, 10/1) and B (10/2, 11/0).
    for order in (["B", "A"], ["A", "B"]):
        tracker = CheckpointTracker(start=9)
        tracker.sent("A", after=9)
        tracker.sent("B", after=9)  # opened while txid 10 was still being packed
        tracker.finished = 11
        tracker.acknowledged(order[0])
        assert tracker.safe_txid() == 9
        tracker.acknowledged(order[1])
        assert tracker.safe_txid() == 11 and tracker.in_flight == 0


def test_txids_without_events_pass_at_once_when_nothing_is_outstanding() -> None:
    tracker = CheckpointTracker(start=4)
    tracker.finished = 5
    tracker.finished = 6
    assert tracker.safe_txid() == 6
    tracker.sent("m7", after=6)  # txid 7's event
    tracker.finished = 7
    tracker.finished = 8  # no event
    assert tracker.safe_txid() == 6
    tracker.acknowledged("m7")
    assert tracker.safe_txid() == 8


def test_a_message_still_open_in_the_packer_holds_the_checkpoint() -> None:
    tracker = CheckpointTracker(start=4)
    tracker.finished = 7
    assert tracker.safe_txid(open_afters=[6, 5]) == 5
    assert tracker.safe_txid(open_afters=[]) == 7


def test_from_the_start_of_the_stream_nothing_is_safe_before_the_first_message() -> None:
    tracker = CheckpointTracker()
    assert tracker.safe_txid() is None
    tracker.sent("m1", after=None)
    tracker.finished = 1
    tracker.finished = 2
    assert tracker.safe_txid() is None
    tracker.acknowledged("m1")
    assert tracker.safe_txid() == 2


def test_a_later_message_acknowledged_first_does_not_move_the_checkpoint() -> None:
    tracker = CheckpointTracker()
    for txid in (1, 2, 3):
        tracker.sent(f"m{txid}", after=tracker.finished)
        tracker.finished = txid
    tracker.acknowledged("m3")
    tracker.acknowledged("m2")
    assert tracker.safe_txid() is None
    tracker.acknowledged("m1")
    assert tracker.safe_txid() == 3 and tracker.in_flight == 0


def test_random_packing_and_completion_orders_match_the_definition() -> None:
    """Events of random txids go to the open message of a random group, messages seal and
    complete at random moments: T is always the highest finished txid whose events, and every
    lower txid's, are all acknowledged."""
    rng = random.Random(3)
    for _ in range(200):
        _random_run(rng)


def _random_run(rng: random.Random) -> None:
    tracker = CheckpointTracker(start=0)
    open_messages: dict[int, tuple[str, int | None, list[int]]] = {}  # group -> message
    in_flight: dict[str, list[int]] = {}
    unacked: list[int] = []  # the txid of every event not acknowledged
    finished = [0]
    serial = 0

    def check() -> None:
        done = [t for t in finished if all(u > t for u in unacked)]
        afters = [after for _, after, _ in open_messages.values()]
        assert tracker.safe_txid(afters) == max(done)

    for txid in range(1, 40):
        for _ in range(rng.choice([0, 0, 1, 1, 2, 4])):
            group = rng.randrange(3)
            if group not in open_messages:
                serial += 1
                open_messages[group] = (f"m{serial}", tracker.finished, [])
            open_messages[group][2].append(txid)
            unacked.append(txid)
        tracker.finished = txid
        finished.append(txid)
        for group in [g for g in open_messages if rng.random() < 0.3]:
            name, after, txids = open_messages.pop(group)
            tracker.sent(name, after)
            in_flight[name] = txids
        for name in [n for n in in_flight if rng.random() < 0.3]:
            tracker.acknowledged(name)
            for t in in_flight.pop(name):
                unacked.remove(t)
        check()
    for name, after, txids in open_messages.values():
        tracker.sent(name, after)
        in_flight[name] = txids
    open_messages.clear()
    for name in rng.sample(sorted(in_flight), len(in_flight)):
        tracker.acknowledged(name)
        for t in in_flight.pop(name):
            unacked.remove(t)
        check()
    assert tracker.safe_txid() == 39


def test_an_acknowledgement_must_name_a_message_in_flight() -> None:
    tracker = CheckpointTracker(start=5)
    tracker.sent("m6", after=5)
    tracker.acknowledged("m6")
    with pytest.raises(ValueError, match="not in flight"):
        tracker.acknowledged("m6")


def test_file_store_round_trip_and_never_moves_back(tmp_path: Path) -> None:
    path = tmp_path / "state" / "cp.json"
    store = FileCheckpointStore(path)
    assert store.load() is None
    store.save(41)
    store.save(40)
    assert FileCheckpointStore(path).load() == 41
    assert json.loads(path.read_text())["txid"] == 41
    assert [p.name for p in path.parent.iterdir()] == ["cp.json"]  # no temp file left


def test_a_corrupt_checkpoint_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "cp.json"
    path.write_text("{not json")
    with pytest.raises(CheckpointError, match=r"cp\.json is not valid"):
        FileCheckpointStore(path).load()


@pytest.fixture
def state_table() -> boto3.client:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        client.create_table(
            TableName="agent-state", BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": STATE_PK, "KeyType": "HASH"},
                       {"AttributeName": STATE_SK, "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": STATE_PK, "AttributeType": "S"},
                                  {"AttributeName": STATE_SK, "AttributeType": "S"}])
        yield client


def test_dynamodb_store_is_conditional_and_per_cluster(state_table: boto3.client) -> None:
    store = DynamoCheckpointStore("agent-state", "c1", state_table)
    assert store.load() is None
    store.save(100)
    DynamoCheckpointStore("agent-state", "c1", state_table).save(90)  # a slower agent: no-op
    assert store.load() == 100
    store.save(100)
    store.save(101)
    assert DynamoCheckpointStore("agent-state", "c1", state_table).load() == 101
    assert DynamoCheckpointStore("agent-state", "c2", state_table).load() is None
    item = state_table.get_item(TableName="agent-state", Key={
        STATE_PK: {"S": "c1"}, STATE_SK: {"S": STATE_ITEM_CHECKPOINT}})["Item"]
    assert item["txid"] == {"N": "101"}


def test_dynamodb_store_missing_table_names_it(state_table: boto3.client) -> None:
    with pytest.raises(CheckpointError, match=r"DynamoDB table nope.*ResourceNotFound"):
        DynamoCheckpointStore("nope", "c1", state_table).load()


def test_a_txid_in_pieces_is_passed_only_after_its_last_piece() -> None:
    # A snapshot at txid 5 in two pieces, each its own message; txid 5 is finished only with
    # the last piece (the pipeline writes `finished` for batches without `more`).
    tracker = CheckpointTracker(4)
    tracker.sent("piece-1", after=4)
    tracker.acknowledged("piece-1")
    assert tracker.safe_txid() == 4  # every piece so far acknowledged, the last to come
    tracker.sent("piece-2", after=4)
    tracker.finished = 5
    assert tracker.safe_txid() == 4
    tracker.acknowledged("piece-2")
    assert tracker.safe_txid() == 5
