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


def test_checkpoint_waits_for_every_message_of_a_txid() -> None:
    # txid 10's three events went out in two messages that complete out of order.
    tracker = CheckpointTracker()
    tracker.register(10, 3)
    tracker.register(11, 1)
    tracker.acknowledge([(10, 1), (11, 1)])  # message B: 10/2 and 11/0
    assert tracker.safe_txid is None
    tracker.acknowledge([(10, 2)])  # message A: 10/0, 10/1
    assert tracker.safe_txid == 11


def test_empty_txids_pass_at_once_when_nothing_is_outstanding() -> None:
    tracker = CheckpointTracker(start=4)
    tracker.register(5, 0)
    tracker.register(6, 0)
    assert tracker.safe_txid == 6
    tracker.register(7, 1)
    tracker.register(8, 0)
    assert tracker.safe_txid == 6
    tracker.acknowledge([(7, 1)])
    assert tracker.safe_txid == 8


def test_a_later_txid_acknowledged_first_does_not_move_the_checkpoint() -> None:
    tracker = CheckpointTracker()
    for txid in (1, 2, 3):
        tracker.register(txid, 1)
    tracker.acknowledge([(3, 1)])
    tracker.acknowledge([(2, 1)])
    assert tracker.safe_txid is None
    tracker.acknowledge([(1, 1)])
    assert tracker.safe_txid == 3 and tracker.pending_txids == 0


def test_random_completion_orders_match_the_definition() -> None:
    rng = random.Random(3)
    for _ in range(50):
        counts = {t: rng.choice([0, 0, 1, 1, 2, 4]) for t in range(1, 40)}
        tracker = CheckpointTracker()
        pieces = []
        for t, n in counts.items():
            tracker.register(t, n)
            k = 0
            while k < n:
                step = rng.randint(1, n - k)
                pieces.append((t, step))
                k += step
        rng.shuffle(pieces)
        acked = {t: 0 for t in counts}
        for t, n in pieces:
            tracker.acknowledge([(t, n)])
            acked[t] += n
            done = [t for t in counts if all(acked[u] == counts[u] for u in counts if u <= t)]
            assert tracker.safe_txid == (max(done) if done else None)


def test_txids_must_increase_and_acks_must_match() -> None:
    tracker = CheckpointTracker(start=5)
    with pytest.raises(ValueError, match="increasing"):
        tracker.register(5, 1)
    tracker.register(6, 1)
    with pytest.raises(ValueError, match="outstanding"):
        tracker.acknowledge([(6, 2)])


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


def test_a_txid_in_pieces_is_passed_only_after_its_last_piece():
    tracker = CheckpointTracker(4)
    tracker.register(5, 2, more=True)  # a snapshot at txid 5: two pieces of 2 and 1
    tracker.acknowledge([(5, 2)])
    assert tracker.safe_txid == 4 and tracker.open_txid == 5  # every piece so far acked
    with pytest.raises(ValueError, match="awaits its last piece"):
        tracker.register(6, 1)
    tracker.register(5, 1)
    assert tracker.safe_txid == 4
    tracker.acknowledge([(5, 1)])
    assert tracker.safe_txid == 5 and tracker.open_txid is None


def test_an_empty_last_piece_passes_an_acknowledged_txid_at_once():
    tracker = CheckpointTracker()
    tracker.register(7, 3, more=True)
    tracker.acknowledge([(7, 3)])
    tracker.register(7, 0)
    assert tracker.safe_txid == 7
