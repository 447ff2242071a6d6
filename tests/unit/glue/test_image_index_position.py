"""The sequencer position as the inventory job reads and moves it (glue_jobs/index_position.py),
against moto's DynamoDB in process. A first start joins the consumer's in-order stream at the
image's txid without overtaking a consumer that got there first. A gap repair after the agent's
checkpoint N waits (on a fake clock) until the consumer has applied through all of N, refuses
a position it does not know of, and moves N to the image's T only if nothing moved it since."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from glue_jobs.index_position import (
    REPAIR_POLL_S,
    IndexRefused,
    await_repair_position,
    check_first_start,
    join_stream,
    move_position,
)
from hdfs_events.sequencer_items import TXID_DONE, applied_through, position_key
from hdfs_events_cli.index_status import read_status
from tests.kit.index_table import create_index_table

TABLE, CLUSTER, T = "index", "prod", 1513
N = 1200  # the agent's checkpoint before the gap


@pytest.fixture
def ddb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_index_table(client, TABLE)
        yield client


def test_a_first_start_joins_the_stream_at_the_image_txid(ddb):
    assert check_first_start(ddb, TABLE, CLUSTER, T) is False
    join_stream(ddb, TABLE, CLUSTER, T)
    status = read_status(ddb, TABLE, CLUSTER)
    assert (status.txid, status.index) == (T, None)  # all of T applied: the next range is T+1
    assert check_first_start(ddb, TABLE, CLUSTER, T) is True  # a rerun writes the marker only
    join_stream(ddb, TABLE, CLUSTER, T)


def test_an_index_the_consumer_applied_is_refused_naming_its_txid(ddb):
    ddb.put_item(TableName=TABLE, Item=applied_through(CLUSTER, T + 40))
    with pytest.raises(IndexRefused, match=rf"applied up to txid {T + 40}.*first start only"):
        check_first_start(ddb, TABLE, CLUSTER, T)


def test_a_consumer_that_got_there_first_is_not_overtaken(ddb):
    ddb.put_item(TableName=TABLE, Item={**applied_through(CLUSTER, T + 3),
                                         "idx": {"N": "2"}})
    with pytest.raises(IndexRefused, match=rf"txid {T + 3}"):
        join_stream(ddb, TABLE, CLUSTER, T)
    assert read_status(ddb, TABLE, CLUSTER).txid == T + 3


def position(txid: int, idx: int = TXID_DONE, *, walk: bool = False) -> dict[str, Any]:
    """The position item as the sequencer writes it, with its lease."""
    return {**applied_through(CLUSTER, txid), "idx": {"N": str(idx)},
            "lease_owner": {"S": "invocation-1"}, "lease_until_ms": {"N": "99"},
            **({"walk": {"S": '{"op": "rename"}'}} if walk else {})}


class FakeClock:
    """Each sleep advances the time by its length and lets the consumer take its next step."""

    def __init__(self, steps: list[Any]) -> None:
        self.now, self.steps, self.sleeps = 0.0, list(steps), []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if self.steps:
            self.steps.pop(0)()


def test_a_repair_waits_until_the_consumer_applied_all_of_its_checkpoint(ddb):
    def put(item: dict[str, Any]) -> Any:
        return lambda: ddb.put_item(TableName=TABLE, Item=item)

    # No position yet, an earlier txid, part of N, N with a subtree walk under way, then N.
    fake = FakeClock([put(position(N - 7)), put(position(N, 3)), put(position(N, walk=True)),
                      put(position(N))])
    assert await_repair_position(ddb, TABLE, CLUSTER, N, T, wait_s=900, sleep=fake.sleep,
                                 clock=fake.clock) is False
    assert fake.sleeps == [REPAIR_POLL_S] * 4


def test_a_repair_waiting_past_its_bound_fails_naming_the_position_n_and_the_argument(ddb):
    ddb.put_item(TableName=TABLE, Item=position(N, 41))
    fake = FakeClock([])
    with pytest.raises(IndexRefused, match=rf"still at txid {N} \(up to event 41\) after 10 s "
                                           rf"\(--repair_wait_s\).*after txid {N} "
                                           r"\(--repair_after\)"):
        await_repair_position(ddb, TABLE, CLUSTER, N, T, wait_s=10, sleep=fake.sleep,
                              clock=fake.clock)
    assert fake.sleeps == [REPAIR_POLL_S] * 5


def test_a_repair_with_no_position_at_all_fails_after_the_wait_saying_so(ddb):
    fake = FakeClock([])
    with pytest.raises(IndexRefused, match=r"still at no position after 0 s"):
        await_repair_position(ddb, TABLE, CLUSTER, N, T, wait_s=0, sleep=fake.sleep,
                              clock=fake.clock)
    assert fake.sleeps == []


@pytest.mark.parametrize("at", [position(N + 3), position(T, 2), position(T + 1)])
def test_a_repair_refuses_a_position_past_its_checkpoint_naming_it_n_and_t(ddb, at):
    ddb.put_item(TableName=TABLE, Item=at)
    fake = FakeClock([])
    txid = int(at["txid"]["N"])
    with pytest.raises(IndexRefused, match=rf"is at txid {txid} .*after txid {N} "
                                           rf"\(--repair_after\) from the image of txid {T}"):
        await_repair_position(ddb, TABLE, CLUSTER, N, T, wait_s=900, sleep=fake.sleep,
                              clock=fake.clock)
    assert fake.sleeps == []  # refused at once, not waited for


def test_an_image_not_after_the_checkpoint_is_refused(ddb):
    ddb.put_item(TableName=TABLE, Item=position(N))
    with pytest.raises(IndexRefused, match=rf"image of txid {N} is not after .* {N}"):
        await_repair_position(ddb, TABLE, CLUSTER, N, N, wait_s=900)


def test_a_repair_rerun_at_the_image_txid_writes_the_marker_only(ddb):
    ddb.put_item(TableName=TABLE, Item=position(T))
    assert await_repair_position(ddb, TABLE, CLUSTER, N, T, wait_s=900) is True


def test_the_move_takes_the_position_from_n_to_t_keeping_the_lease(ddb):
    ddb.put_item(TableName=TABLE, Item=position(N))
    move_position(ddb, TABLE, CLUSTER, N, T)
    item = ddb.get_item(TableName=TABLE, Key=position_key(CLUSTER))["Item"]
    assert item == position(T)
    status = read_status(ddb, TABLE, CLUSTER)
    assert (status.txid, status.index) == (T, None)
    move_position(ddb, TABLE, CLUSTER, N, T)  # a rerun's move after a crash: already at T


@pytest.mark.parametrize("moved", [position(N + 1), position(N, walk=True), position(N, 5)])
def test_a_position_that_moved_during_the_repair_is_not_overwritten(ddb, moved):
    ddb.put_item(TableName=TABLE, Item=moved)
    with pytest.raises(IndexRefused, match=rf"moved while the index was repaired: it is at "
                                           rf"txid {moved['txid']['N']} .*not applied through "
                                           rf"{N}"):
        move_position(ddb, TABLE, CLUSTER, N, T)
    assert ddb.get_item(TableName=TABLE, Key=position_key(CLUSTER))["Item"] == moved
