"""Directory RENAME and UNLINK on DynamoDB (moto in-process): whole subtrees, larger than one invocation,
continued by continue requests on the apply queue, marked in progress until done, and nothing
later applied before the walk ends."""

from __future__ import annotations

import pytest

from hdfs_events.event import EventType, HdfsEvent
from hdfs_events_cli.index_reader import IndexReader
from lambdas.ingest import handler
from lambdas.ingest.handler import APPLY_MARGIN_MS
from lambdas.ingest.index_model import Entry
from lambdas.ingest.index_table import DynamoIndexStore, entry_to_item, item_to_entry
from lambdas.ingest.subtree import SubtreeOp
from tests.kit.index_builders import T0, TREE_FILES, tree
from tests.kit.ingest_aws import TABLE
from tests.kit.ingest_builders import pack, with_manifests
from tests.kit.lambda_events import Context, event
from tests.kit.sqs_lambda import lambda_record

APPLY_QUEUE_ARN = "arn:aws:sqs:eu-west-1:123456789012:hdfs-events-apply.fifo"


class Clock:
    """Milliseconds that pass one second per look: applying ranges given a few seconds takes a few
    steps of a walk, then asks for another invocation."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        self.now += 1000
        return self.now


def short_invocations(seconds: int) -> Context:
    clock = Clock()
    handler.consumer().clock_ms = clock
    handler.consumer().sequencer.clock_ms = clock
    context = Context()
    context.get_remaining_time_in_millis = lambda: APPLY_MARGIN_MS + seconds * 1000
    return context


def budgets(entries: int) -> None:
    """Walks of more than `entries` go on from the table, `entries` children a page."""
    index = handler.consumer().index
    index.subtree_budget = index.listing_budget = entries


def apply_round(aws, budget: int, context: Context | None = None) -> bool:
    """One invocation of the apply queue's mapping, with what it holds (up to ten continue
    requests of the cluster's group), as Lambda would deliver them; False when it is empty."""
    got = aws.sqs.receive_message(QueueUrl=aws.queues.apply, MaxNumberOfMessages=10,
                                  MessageSystemAttributeNames=["All"],
                                  MessageAttributeNames=["All"]).get("Messages", [])
    if not got:
        return False
    records = [lambda_record(m, queue_arn=APPLY_QUEUE_ARN, region="eu-west-1") for m in got]
    budgets(budget)
    assert handler.handler({"Records": records}, context or Context()) == {"batchItemFailures": []}
    aws.sqs.delete_message_batch(QueueUrl=aws.queues.apply, Entries=[
        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])
    return True


def deliver_continue_requests(aws, budget: int, context: Context | None = None,
                              max_rounds: int = 100) -> int:
    """Delivers the apply queue's continue requests until none is left; returns how many
    invocations that took."""
    for rounds in range(max_rounds + 1):
        if not apply_round(aws, budget, context):
            return rounds
    raise AssertionError("continuations did not finish")


def ingest(aws, events: list[HdfsEvent], budget: int, context: Context | None = None) -> None:
    """The events' messages and the manifest of their txids (consecutive in a Log), then the
    invocation of the continue request their invocation sent."""
    budgets(budget)
    sent = with_manifests(pack(events, per_message=50), after=events[0].txid - 1)
    assert handler.handler(event(*sent), context or Context()) == {"batchItemFailures": []}
    assert apply_round(aws, budget, context)


def test_directory_rename_larger_than_one_invocation_continues_until_done(aws) -> None:
    log = tree()
    ingest(aws, log.events, budget=1000)
    log.add(EventType.RENAME, "/data/d", dst_path="/data/e")
    context = short_invocations(seconds=3)
    ingest(aws, log.events[-1:], budget=4, context=context)
    reader = IndexReader(TABLE, "prod")
    moving = reader.stat("/data/e")
    assert moving is not None and moving.in_progress  # marked while half-moved
    assert moving.in_progress[0]["op"] == "RENAME"
    assert reader.stat("/data/e/f00").in_progress
    assert reader.ls("/data/d")  # what has not moved yet is still at the source
    rounds = deliver_continue_requests(aws, budget=4, context=context)
    assert rounds >= 1  # 36 children, 4 per page, a few steps per invocation
    assert [e.name for e in reader.ls("/data/e")] == [f"f{i:02d}" for i in range(TREE_FILES)] + [
        "sub"]
    assert {e.name: e.size for e in reader.ls("/data/e/sub")} == {
        f"g{i}": 200 + i for i in range(5)}
    assert reader.ls("/data/d") == [] and reader.ls("/data/d/sub") == []
    assert reader.stat("/data/d").deleted and reader.stat("/data/d").moved_to == "/data/e"
    assert not reader.stat("/data/e").in_progress  # marker cleared at the end
    assert not reader.stat("/data/e/sub/g3").in_progress


def test_directory_delete_larger_than_one_invocation_leaves_only_markers(aws) -> None:
    log = tree()
    ingest(aws, log.events, budget=1000)
    log.add(EventType.UNLINK, "/data/d")
    context = short_invocations(seconds=2)
    ingest(aws, log.events[-1:], budget=5, context=context)
    assert IndexReader(TABLE, "prod").stat("/data/d").in_progress
    assert deliver_continue_requests(aws, budget=5, context=context) >= 1
    reader = IndexReader(TABLE, "prod")
    assert reader.ls("/data/d") == [] and reader.ls("/data/d/sub") == []
    markers = reader.ls("/data/d", include_deleted=True)
    assert len(markers) == TREE_FILES + 1 and all(m.deleted for m in markers)
    assert [e.name for e in reader.ls("/data")] == []
    items = aws.index_items()
    assert all("expires_at" in i for i in items if i["deleted"]["BOOL"])


def test_changes_under_a_renamed_directory_wait_for_the_walk(aws) -> None:
    log = tree()
    ingest(aws, log.events, budget=1000)
    log.add(EventType.RENAME, "/data/d", dst_path="/data/e")
    rename = log.events[-1:]
    log.file("/data/e/f03", 999)  # overwrites a file the walk has not moved yet
    log.file("/data/e/new", 7)
    log.add(EventType.UNLINK, "/data/e/f05")
    later = log.events[-5:]
    context = short_invocations(seconds=2)
    ingest(aws, rename, budget=2, context=context)
    ingest(aws, later, budget=2, context=context)  # arrived while the walk is unfinished
    reader = IndexReader(TABLE, "prod")
    assert reader.stat("/data/e").in_progress and reader.stat("/data/e/new") is None
    deliver_continue_requests(aws, budget=2, context=context)
    sizes = {e.name: e.size for e in IndexReader(TABLE, "prod").ls("/data/e")}
    expected = {f"f{i:02d}": 100 + i for i in range(TREE_FILES) if i != 5} | {"f03": 999, "new": 7,
                                                                      "sub": None}
    assert sizes == expected


def test_index_entry_round_trips_through_a_dynamodb_item(aws) -> None:
    entry = Entry(cluster="prod", path="/data/x", attrs={"type": "FILE", "size": None,
                                                        "owner": "etl"},
                  version=(9, 2), deleted=True, moved_to="/data/y",
                  walk={"op": "RENAME", "txid": 9, "index": 2, "src": "/data/x",
                        "dst": "/data/y"})
    assert item_to_entry(entry_to_item(entry, now_s=0)) == entry
    store = DynamoIndexStore(TABLE, aws.ddb)
    assert store.put_many([entry]) == []
    assert store.get_many("prod", ["/data/x", "/data/none"]) == {"/data/x": entry}


def test_continuation_round_trips_through_json() -> None:
    op = SubtreeOp(kind="RENAME", cluster="prod", version=(5, 1), src="/data/a",
                   dst="/data/b", cursor=(("", "x", 16), ("/x", None, None)), step=2)
    assert SubtreeOp.from_json(op.to_json()) == op


def test_a_walk_saved_before_frames_held_shard_counts_reads_them() -> None:
    saved = ('{"continuation":3,"kind":"UNLINK","cluster":"prod","version":[5,0],'
             '"src":"/data/a","dst":null,"cursor":[["","x"],["/y",null]],"step":1}')
    assert SubtreeOp.from_json(saved).cursor == (("", "x", None), ("/y", None, None))


def test_a_continuation_with_a_bad_shard_count_is_refused_naming_it() -> None:
    op = SubtreeOp(kind="UNLINK", cluster="prod", version=(5, 0), src="/data/a")
    with pytest.raises(ValueError, match="shard count must be an integer"):
        SubtreeOp.from_json(op.to_json().replace('null]]', '"16"]]'))
