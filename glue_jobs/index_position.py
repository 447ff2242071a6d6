"""The consumer sequencer's position (`<cluster>!position`) as the image job reads and moves it
(docs/fsimage.md, "First start from the image" and "Gap repair from the image"): the driver's
DynamoDB calls before and after the index writes of glue_jobs/image_index.py.

A first start joins the stream: the position is put where none exists. A gap repair takes the
index over from the consumer at the agent's checkpoint N (`--repair_after`): it waits until
the sequencer has applied everything the agent sent, i.e. through all of N with no subtree walk
under way, and after its writes moves the position from N to the image's T in one conditional
update.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hdfs_events import names
from hdfs_events.sequencer_items import (
    POSITION_INDEX,
    POSITION_TXID,
    POSITION_WALK,
    TXID_DONE,
    applied_through,
    position_key,
)

# How often a repair reads the position while the consumer applies what came before the gap
# (a consistent read: half a read unit a poll).
REPAIR_POLL_S = 2.0


class IndexRefused(RuntimeError):
    """The index cannot be written from this image: not a first start, or the position is not
    the one a repair takes over at."""


@dataclass(frozen=True, slots=True)
class Position:
    txid: int
    index: int  # of the txid, the events applied; TXID_DONE: all of them
    walking: bool  # a subtree walk under way (`walk`)

    def __str__(self) -> str:
        of = "all of it" if self.index == TXID_DONE else f"up to event {self.index}"
        return f"txid {self.txid} ({of}{', a subtree walk under way' if self.walking else ''})"

    def applied_through(self, txid: int) -> bool:
        return (self.txid, self.index, self.walking) == (txid, TXID_DONE, False)


def read_position(ddb: Any, table: str, cluster: str) -> Position | None:
    """None: no item yet, or one holding the lease only."""
    item = ddb.get_item(TableName=table, Key=position_key(cluster),
                        ConsistentRead=True).get("Item")
    if item is None or POSITION_TXID not in item:
        return None
    return Position(int(item[POSITION_TXID]["N"]),
                    int(item.get(POSITION_INDEX, {"N": "0"})["N"]), POSITION_WALK in item)


def check_first_start(ddb: Any, table: str, cluster: str, txid: int) -> bool:
    """True: the index is already applied through exactly `txid` (a rerun after a crash between
    the position and the marker); False: no position, a first start. Any other position is
    refused: the consumer has applied ranges of its own there."""
    at = read_position(ddb, table, cluster)
    if at is None:
        return False
    if (at.txid, at.index) == (txid, TXID_DONE):
        return True
    raise IndexRefused(
        f"the index of cluster {cluster} is already applied up to txid {at.txid}: writing it "
        f"from the image of txid {txid} is for a first start only (no "
        f"{names.position_partition(cluster)} item); a gap repair from the image names the "
        "agent's checkpoint in --repair_after")


def join_stream(ddb: Any, table: str, cluster: str, txid: int) -> None:
    """The position put only where none exists: a consumer that started applying ranges first
    keeps its own (the run then fails, naming it)."""
    try:
        ddb.put_item(TableName=table, Item=applied_through(cluster, txid),
                     ConditionExpression="attribute_not_exists(#pk)",
                     ExpressionAttributeNames={"#pk": names.INDEX_PK})
    except ddb.exceptions.ConditionalCheckFailedException:
        if not check_first_start(ddb, table, cluster, txid):
            raise IndexRefused(f"{names.position_partition(cluster)} appeared while the index "
                               "was written, without a txid") from None


def await_repair_position(ddb: Any, table: str, cluster: str, after: int, txid: int, *,
                          wait_s: float, sleep: Callable[[float], None] = time.sleep,
                          clock: Callable[[], float] = time.monotonic) -> bool:
    """False: the index is applied through exactly `after` (N), the repair goes on; True: it is
    applied through `txid` (T), a rerun after a crash between the position and the marker.

    Below N (no position yet, an earlier txid, part of N, a walk under way) the consumer is
    still applying what the agent sent before the gap, and the agent sends nothing after N
    until the repair is done: wait, up to `wait_s`. Anything else (past N, or part of T) means
    the consumer applied ranges this repair does not know of: refused."""
    if txid <= after:
        raise IndexRefused(f"the image of txid {txid} is not after the agent's checkpoint "
                           f"{after} (--repair_after): it cannot repair the gap after it")
    deadline = clock() + wait_s
    while True:
        at = read_position(ddb, table, cluster)
        if at is not None and (at.txid, at.index) == (txid, TXID_DONE):
            return True
        if at is not None and at.applied_through(after):
            return False
        if at is not None and at.txid > after:
            raise IndexRefused(
                f"the index of cluster {cluster} is at {at}: a repair after txid {after} "
                f"(--repair_after) from the image of txid {txid} needs it applied through "
                f"{after} exactly")
        if clock() >= deadline:
            raise IndexRefused(
                f"the index of cluster {cluster} is still at "
                f"{at if at is not None else 'no position'} after {wait_s:g} s "
                f"(--repair_wait_s): a repair after txid {after} (--repair_after) waits for "
                f"the consumer to apply everything through {after}")
        sleep(REPAIR_POLL_S)


def move_position(ddb: Any, table: str, cluster: str, after: int, txid: int) -> None:
    """Applied through `after` -> applied through `txid`, in one conditional update (the lease
    attributes untouched); a position that moved meanwhile is refused, naming it."""
    try:
        ddb.update_item(
            TableName=table, Key=position_key(cluster),
            UpdateExpression="SET #txid = :txid, #idx = :done",
            ConditionExpression="#txid = :after AND #idx = :done AND attribute_not_exists(#walk)",
            ExpressionAttributeNames={"#txid": POSITION_TXID, "#idx": POSITION_INDEX,
                                      "#walk": POSITION_WALK},
            ExpressionAttributeValues={":txid": {"N": str(txid)}, ":after": {"N": str(after)},
                                       ":done": {"N": str(TXID_DONE)}})
    except ddb.exceptions.ConditionalCheckFailedException:
        at = read_position(ddb, table, cluster)
        if at is not None and (at.txid, at.index) == (txid, TXID_DONE):
            return
        raise IndexRefused(
            f"{names.position_partition(cluster)} moved while the index was repaired: it is "
            f"at {at if at is not None else 'no position'}, not applied through {after} "
            f"(--repair_after)") from None
