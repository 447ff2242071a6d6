"""A chunk's index traffic on DynamoDB (moto in-process): each changed entry written once, in
BatchWriteItem calls of 25; reads in BatchGetItem pages of 100; a throttled call retried by
botocore, unprocessed items sent again, an item DynamoDB refuses as invalid reported and the
others written."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from hdfs_events.event import EventType, HdfsEvent, MetadataType
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.index_table import DynamoIndexStore
from tests.kit.dynamodb_faults import FailWrites
from tests.kit.index_builders import apply_in_order, ev, live, mkdir, mkfile
from tests.kit.ingest_aws import TABLE
from tests.kit.replay import in_order_state

FILES = 60


class CallCounter:
    def __init__(self, ddb: Any) -> None:
        self.calls: Counter[str] = Counter()
        self.sizes: list[int] = []
        ddb.meta.events.register("before-parameter-build.dynamodb", self)

    def __call__(self, model: Any, params: dict, **_: Any) -> None:
        self.calls[model.name] += 1
        if model.name == "BatchWriteItem":
            self.sizes.append(sum(len(v) for v in params["RequestItems"].values()))
        if model.name == "BatchGetItem":
            self.sizes.append(-sum(len(v["Keys"]) for v in params["RequestItems"].values()))



def a_directory_of_files() -> list[HdfsEvent]:
    return [mkdir(1, "/data"), mkdir(2, "/data/d"),
            *(mkfile(10 + i, f"/data/d/f{i:03}") for i in range(FILES))]


def chmod_all(txid: int = 1000) -> list[HdfsEvent]:
    return [ev(txid + i, EventType.METADATA, f"/data/d/f{i:03}",
               metadata_type=MetadataType.PERMS, perms="0600") for i in range(FILES)]


def test_a_chunk_writes_each_entry_once_in_batches_of_25_and_reads_in_pages(ddb) -> None:
    store = DynamoIndexStore(TABLE)
    counter = CallCounter(store.ddb)
    setup = a_directory_of_files()
    closes = [ev(500 + i, EventType.CLOSE, f"/data/d/f{i:03}", size=i) for i in range(FILES)]
    apply_in_order(NamespaceIndex(store, ["/data"]), [*setup, *closes, *chmod_all()])
    # 62 entries, each once, though each file had three events; nothing read (all created).
    assert counter.calls == {"BatchWriteItem": 3}
    assert sorted(counter.sizes) == [12, 25, 25]
    counter.sizes.clear()
    apply_in_order(NamespaceIndex(store, ["/data"]), chmod_all(2000))
    # One read of the 60 files and their two parents (read with what they hold), each under
    # both keys it may have (its parent's partition and its shard of it): two pages at once.
    assert counter.calls["BatchGetItem"] == 2
    assert sorted(counter.sizes) == [-100, -24, 10, 25, 25]
    assert live(ddb) == in_order_state([*setup, *closes, *chmod_all()], "/data")


def test_throttled_writes_are_retried_and_land(ddb) -> None:
    store = DynamoIndexStore(TABLE)
    throttle = FailWrites(store.ddb, ["/data/d/f009", "/data/d/f050"], times=4)
    apply_in_order(NamespaceIndex(store, ["/data"]), [*a_directory_of_files(), *chmod_all()])
    assert throttle.failed == 4
    assert live(ddb) == in_order_state([*a_directory_of_files(), *chmod_all()], "/data")


def test_writes_throttled_past_the_retries_raise_and_the_chunk_applied_again_lands(ddb) -> None:
    store = DynamoIndexStore(TABLE)
    events = [*a_directory_of_files(), *chmod_all()]
    throttle = FailWrites(store.ddb, ["/data/d/f013"], times=10**6)
    with pytest.raises(Exception, match="ProvisionedThroughputExceeded"):
        apply_in_order(NamespaceIndex(store, ["/data"]), events)
    throttle.lift()
    apply_in_order(NamespaceIndex(store, ["/data"]), events)  # from the saved position
    assert live(ddb) == in_order_state(events, "/data")


def test_unprocessed_items_are_sent_again(ddb) -> None:
    store = DynamoIndexStore(TABLE)
    real = store.ddb.batch_write_item
    calls = []

    def half_processed(**kw: Any) -> dict:
        calls.append(kw)
        items = kw["RequestItems"][TABLE]
        if len(calls) == 1:  # DynamoDB took the first half only
            real(RequestItems={TABLE: items[:len(items) // 2]})
            return {"UnprocessedItems": {TABLE: items[len(items) // 2:]}}
        return real(**kw)

    store.ddb.batch_write_item = half_processed  # type: ignore[method-assign]
    events = [mkdir(1, "/data"), *(mkfile(10 + i, f"/data/f{i}") for i in range(20))]
    apply_in_order(NamespaceIndex(store, ["/data"]), events)
    assert len(calls) == 2 and len(calls[1]["RequestItems"][TABLE]) == 11
    assert live(ddb) == in_order_state(events, "/data")


def test_an_entry_dynamodb_refuses_is_skipped_with_the_reason_and_the_rest_lands(ddb) -> None:
    store = DynamoIndexStore(TABLE)
    real = store.ddb.put_item
    refused_path = "/data/f3"

    def validating(**kw: Any) -> dict:  # what DynamoDB says of, e.g., an item over 400 KB
        if kw["Item"]["path"]["S"] == refused_path:
            raise store.ddb.exceptions.ClientError(
                {"Error": {"Code": "ValidationException",
                           "Message": "Item size has exceeded the maximum allowed size"}},
                "PutItem")
        return real(**kw)

    def batch(**kw: Any) -> dict:
        if any(r["PutRequest"]["Item"]["path"]["S"] == refused_path
               for r in kw["RequestItems"][TABLE]):
            raise store.ddb.exceptions.ClientError(
                {"Error": {"Code": "ValidationException", "Message": "Item size"}},
                "BatchWriteItem")
        return store.ddb.__class__.batch_write_item(store.ddb, **kw)

    store.ddb.put_item = validating  # type: ignore[method-assign]
    store.ddb.batch_write_item = batch  # type: ignore[method-assign]
    events = [mkdir(1, "/data"), *(mkfile(10 + i, f"/data/f{i}") for i in range(6))]
    skipped = apply_in_order(NamespaceIndex(store, ["/data"]), events)
    assert [(s.path, s.txid) for s in skipped] == [(refused_path, 13)]
    assert "maximum allowed size" in skipped[0].reason
    assert set(live(ddb)) == {"/data", *(f"/data/f{i}" for i in range(6) if i != 3)}
