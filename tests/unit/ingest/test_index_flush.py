"""A message's index writes go out together (DynamoIndexStore.put_many, a thread pool of
conditional PutItems): a conflict on any one of them re-applies the message from fresh reads, a
throttled one is retried by botocore or fails the record, and no write is lost either way.
DynamoDB through moto in-process."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError
from moto import mock_aws

from hdfs_events.event import EventType, HdfsEvent, MetadataType
from lambdas.ingest.dal import DynamoIndexStore, item_to_entry
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.index_model import Entry
from lambdas.ingest.index_view import IndexView
from tests.unit.ingest.conftest import TABLE, create_resources
from tests.unit.ingest.memory_store import MemoryIndexStore
from tests.unit.ingest.test_index_examples import ev, mkdir, mkfile

FILES = 30
CLIENT_MAX_RETRIES = 3  # dal.CLIENT_CONFIG (botocore rewrites that dict when a client is made)


class _Body:
    """The raw body botocore reads a response from."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


class FailPuts:
    """Answers the first `times` PutItems of each chosen path with an error, as DynamoDB does
    under throttling (a hot partition) or a 5xx. Registered first on the client's
    `before-send`, so botocore's retry handler sees the error as if it came over the wire.

    Against moto server nothing is sent: the request was refused. In-process moto sees the
    request anyway (botocore runs every before-send handler; the first answer wins): there the
    write is applied and only its response is lost, the harder case for compare-and-set (the
    retry finds the rev already moved by our own write)."""

    THROTTLED = (400, "ProvisionedThroughputExceededException",
                 "The level of configured provisioned throughput for the table was exceeded")
    INTERNAL = (500, "InternalServerError", "Internal server error")

    def __init__(self, ddb: Any, paths: Sequence[str], times: int,
                 error: tuple[int, str, str] = THROTTLED) -> None:
        self.left = dict.fromkeys(paths, times)
        self.attempts: Counter[str] = Counter()
        self.failed = 0
        self.status, code, message = error
        self.body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}",
                                "message": message}).encode()
        self._lock = threading.Lock()
        self._ddb = ddb
        ddb.meta.events.register_first("before-send.dynamodb.PutItem", self)

    def __call__(self, request: Any, **_: Any) -> AWSResponse | None:
        path = json.loads(request.body)["Item"]["path"]["S"]
        with self._lock:
            self.attempts[path] += 1
            if self.left.get(path, 0) <= 0:
                return None
            self.left[path] -= 1
            self.failed += 1
        return AWSResponse(request.url, self.status,
                           {"Content-Type": "application/x-amz-json-1.0"}, _Body(self.body))

    def lift(self) -> None:
        self._ddb.meta.events.unregister("before-send.dynamodb.PutItem", self)


class RecordingStore(DynamoIndexStore):
    """The real store, remembering what each flush wrote; `before_flush` runs once, before the
    first one (where a concurrent invocation gets in between our reads and our writes)."""

    def __init__(self) -> None:
        super().__init__(TABLE)
        self.flushed: list[list[str]] = []
        self.before_flush: Any = None

    def put_many(self, writes: Sequence[tuple[Entry, int]]) -> list[str]:
        if self.before_flush is not None:
            hook, self.before_flush = self.before_flush, None
            hook()
        self.flushed.append([e.path for e, _ in writes])
        return super().put_many(writes)


@pytest.fixture
def ddb() -> Iterator[Any]:
    """A client to look at the table; the stores make their own, as in the Lambda."""
    with mock_aws():
        client = boto3.client("dynamodb")
        create_resources(boto3.client("s3"), client, boto3.client("sqs"))
        yield client


def is_entry(item: dict) -> bool:
    """An entry's partition is "<cluster>#<parent>"; the sequencer's beside them "<cluster>!..."."""
    return "!" not in item["parent"]["S"].partition("#")[0]


def live(ddb: Any) -> dict[str, dict]:
    pages = ddb.get_paginator("scan").paginate(TableName=TABLE)
    store = DynamoIndexStore(TABLE, ddb)
    entries = [item_to_entry(store._from_wire(i)) for page in pages for i in page["Items"]
               if is_entry(i)]
    return {e.path: dict(e.values) for e in entries if e.alive}


def reference(*messages: list[HdfsEvent]) -> dict[str, dict]:
    """The state the dict store reaches for the same messages (the property tests hold it to
    in-order application)."""
    store = MemoryIndexStore()
    index = NamespaceIndex(store, ["/data"])
    for message in messages:
        assert index.apply(message) == []
    return store.live("prod")


def a_directory_of_files() -> list[HdfsEvent]:
    return [mkdir(1, "/data"), mkdir(2, "/data/d"),
            *(mkfile(10 + i, f"/data/d/f{i:02}") for i in range(FILES))]


def chmod_all() -> list[HdfsEvent]:
    return [ev(100 + i, EventType.METADATA, f"/data/d/f{i:02}",
               metadata_type=MetadataType.PERMS, perms="0600") for i in range(FILES)]


def test_a_conflict_on_one_entry_among_many_reapplies_the_message_and_converges(ddb) -> None:
    setup, chmod = a_directory_of_files(), chmod_all()
    chown = [ev(200, EventType.METADATA, "/data/d/f07", metadata_type=MetadataType.OWNER,
                owner="bob", group="bob")]
    NamespaceIndex(DynamoIndexStore(TABLE), ["/data"]).apply(setup)
    store = RecordingStore()
    # Another invocation (another message group) changes f07 after we read it, before we write.
    store.before_flush = lambda: NamespaceIndex(DynamoIndexStore(TABLE),
                                                ["/data"]).apply(chown)

    assert NamespaceIndex(store, ["/data"]).apply(chmod) == []

    first, retry = store.flushed
    assert len(first) == FILES
    # The other 29 landed in the failed flush and were not written again: only f07 was.
    assert retry == ["/data/d/f07"]
    state = live(ddb)
    assert state == reference(setup, chmod, chown)
    assert state["/data/d/f07"]["perms"] == "0600" and state["/data/d/f07"]["owner"] == "bob"


def test_a_write_whose_response_was_lost_is_retried_and_the_message_converges(ddb) -> None:
    """The retry of an applied write fails its condition (our own write moved the rev): that
    is a ConcurrentUpdate, the message is applied again from fresh reads, and nothing is
    written twice."""
    setup, chmod = a_directory_of_files(), chmod_all()
    NamespaceIndex(DynamoIndexStore(TABLE), ["/data"]).apply(setup)
    store = RecordingStore()
    lost = FailPuts(store.ddb, [f"/data/d/f{i:02}" for i in (3, 11, 25)], times=1,
                    error=FailPuts.INTERNAL)

    NamespaceIndex(store, ["/data"]).apply(chmod)

    assert lost.failed == 3 and lost.attempts["/data/d/f11"] == 2
    assert [len(paths) for paths in store.flushed] == [FILES]  # the re-application wrote none
    assert live(ddb) == reference(setup, chmod)


def test_responses_lost_past_the_retries_fail_the_record_and_redelivery_completes_it(
        ddb) -> None:
    setup, chmod = a_directory_of_files(), chmod_all()
    store = DynamoIndexStore(TABLE)
    NamespaceIndex(store, ["/data"]).apply(setup)
    throttle = FailPuts(store.ddb, ["/data/d/f05", "/data/d/f17"], times=10**6)

    with pytest.raises(ClientError, match="ProvisionedThroughputExceeded"):
        NamespaceIndex(store, ["/data"]).apply(chmod)
    # botocore's `max_attempts` counts retries: the first try and 3 more.
    assert throttle.attempts["/data/d/f05"] == 1 + CLIENT_MAX_RETRIES == 4
    assert live(ddb)["/data/d/f04"]["perms"] == "0600"  # the others landed meanwhile

    throttle.lift()
    NamespaceIndex(store, ["/data"]).apply(chmod)  # SQS delivers the failed record again

    assert live(ddb) == reference(setup, chmod)


def test_a_directory_delete_in_the_message_that_filled_it_writes_each_entry_once(ddb) -> None:
    """The walk reads partitions with the message's unwritten entries laid over them."""
    setup = a_directory_of_files()
    unlink = [ev(50, EventType.UNLINK, "/data/d")]
    store = RecordingStore()
    index = NamespaceIndex(store, ["/data"], subtree_budget=7)  # pages of 7: ours and stored

    pending = index.apply(setup + unlink)

    assert len(store.flushed) == 1
    assert sorted(store.flushed[0]) == sorted(e.path for e in setup)
    while pending:  # the continuations, as later invocations
        pending = [op for p in pending if (op := index.resume(p)) is not None]
    assert live(ddb) == reference(setup + unlink)
    assert sorted(live(ddb)) == ["/data"]


def test_pages_merge_unwritten_children_in_name_order_at_every_page_size() -> None:
    store = MemoryIndexStore()
    view = IndexView(store, "prod")
    for name in ("a0", "a2", "a4", "a6"):
        entry = view.get(f"/d/{name}")
        view.save(entry, _with_type(entry))
    view.flush()
    view = IndexView(store, "prod")
    for name in ("a1", "a3", "a5", "a7"):
        entry = view.get(f"/d/{name}")
        view.save(entry, _with_type(entry))
    stored = view.get("/d/a2")
    view.save(stored, _with_type(stored, "DIRECTORY"))
    expected = [f"a{i}" for i in range(8)]

    for limit in range(1, 10):
        seen: list[Entry] = []
        after = None
        while True:
            page = view.children("/d", after=after, limit=limit)
            seen += page
            if len(page) < limit:
                break
            after = page[-1].path.rsplit("/", 1)[1]
        assert [e.path.rsplit("/", 1)[1] for e in seen] == expected, limit
        assert next(e for e in seen if e.path == "/d/a2").type == "DIRECTORY"
    assert store.puts == 4  # nothing written by reading


def _with_type(entry: Entry, type_: str = "FILE") -> Entry:
    from lambdas.ingest import index_model as m
    return m.set_values(entry, {"type": type_}, (entry.rev + 1, 0), (entry.rev + 1, 0))


class CountingStore(MemoryIndexStore):
    def __init__(self) -> None:
        super().__init__()
        self.queries: Counter[str] = Counter()
        self.gets = 0

    def children(self, cluster: str, parent: str, *, after: str | None,
                 limit: int) -> list[Entry]:
        self.queries[parent] += 1
        return super().children(cluster, parent, after=after, limit=limit)

    def get_many(self, cluster: str, paths: Any) -> dict[str, Entry]:
        self.gets += 1
        return super().get_many(cluster, paths)


def test_a_directory_delete_queries_each_partition_once() -> None:
    """Coming back from a subdirectory, the walk continues the parent's page it read before."""
    tree = [mkdir(1, "/data"), mkdir(2, "/data/d")]
    for i in range(4):
        tree += [mkdir(10 + 10 * i, f"/data/d/s{i}"),
                 *(mkfile(11 + 10 * i + j, f"/data/d/s{i}/f{j}") for j in range(3))]
    unlink = [ev(100, EventType.UNLINK, "/data/d")]
    store = CountingStore()
    index = NamespaceIndex(store, ["/data"])
    index.apply(tree)

    assert index.apply(unlink) == []

    assert store.queries == {"/data/d": 1, **{f"/data/d/s{i}": 1 for i in range(4)}}
    assert store.live("prod") == reference(tree + unlink)


def test_a_rename_reads_its_destination_with_the_parents_it_lands_under() -> None:
    tree = [mkdir(1, "/data"), mkfile(2, "/data/f")]
    move = [ev(3, EventType.RENAME, "/data/f", dst_path="/data/new/deep/f")]
    store = CountingStore()
    index = NamespaceIndex(store, ["/data"])
    index.apply(tree)
    store.gets = 0

    index.apply(move)

    # The message's paths, then the destination with its parents (one read, were the
    # destination prefetched with the message's paths).
    assert store.gets <= 2
    assert store.live("prod") == reference(tree + move)
