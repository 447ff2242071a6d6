"""The index's concurrent writes against moto server over HTTP, as the Lambda reaches
DynamoDB: a real edit log indexes to the same state as the dict store does, throttled writes
are refused and retried, and writes throttled past botocore's retries stop the drain (logged,
counted), which the next message for the cluster completes."""

from __future__ import annotations

import io
from typing import Any

import boto3
import pytest

from bench.workload import write_edit_log
from hdfs_events import names
from hdfs_events.event import HdfsEvent
from lambdas.ingest import handler
from lambdas.ingest.dal import DynamoIndexStore
from lambdas.ingest.index import NamespaceIndex
from onprem_agent.editlog import read_ops
from onprem_agent.translate import translate_ops
from tests.unit.ingest.conftest import BUCKET, TABLE, create_resources
from tests.unit.ingest.helpers import pack, sample_events, with_manifests
from tests.unit.ingest.lambda_events import Context, cluster_senders, event
from tests.unit.ingest.memory_store import MemoryIndexStore
from tests.unit.ingest.test_index_examples import mkfile
from tests.unit.ingest.test_index_flush import (
    FILES,
    FailPuts,
    RecordingStore,
    a_directory_of_files,
    chmod_all,
    live,
    reference,
)


@pytest.fixture
def ddb(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    client = boto3.client("dynamodb")
    url = create_resources(boto3.client("s3"), client, boto3.client("sqs"))
    for key, value in {names.ENV_LAKE_BUCKET: BUCKET, names.ENV_INDEX_TABLE: TABLE,
                       names.ENV_INDEX_PREFIXES: "/data", names.ENV_LOG_MODE: "summary",
                       names.ENV_EVENT_QUEUE_URL: url,
                       names.ENV_CLUSTER_SENDERS: cluster_senders()}.items():
        monkeypatch.setenv(key, value)
    handler.consumer.cache_clear()
    yield client
    handler.consumer.cache_clear()


def generated_events(ops: int) -> list[HdfsEvent]:
    """Jobs writing through `_temporary`, renames into place, deletes of whole directories."""
    buf = io.StringIO()
    write_edit_log(buf, ops=ops, seed=5)
    return list(translate_ops(read_ops(io.BytesIO(buf.getvalue().encode())), "prod"))


@pytest.mark.parametrize(("events", "per_message"), [
    pytest.param(sample_events(), 7, id="real edit log"),
    pytest.param(generated_events(400), 40, id="generated workload"),
])
def test_the_index_on_dynamodb_reaches_the_dict_stores_state(ddb, events, per_message) -> None:
    messages = [events[i:i + per_message] for i in range(0, len(events), per_message)]
    memory = MemoryIndexStore()
    for store in (DynamoIndexStore(TABLE), memory):
        index = NamespaceIndex(store, ["/"], subtree_budget=3)
        pending = [op for message in messages for op in index.apply(message)]
        while pending:
            pending = [op for p in pending if (op := index.resume(p)) is not None]
    assert live(ddb) == memory.live("prod") != {}


def test_throttled_writes_are_refused_then_retried_and_land(ddb) -> None:
    setup, chmod = a_directory_of_files(), chmod_all()
    NamespaceIndex(DynamoIndexStore(TABLE), ["/data"]).apply(setup)
    store = RecordingStore()
    throttle = FailPuts(store.ddb, [f"/data/d/f{i:02}" for i in (0, 9, 29)], times=2)

    NamespaceIndex(store, ["/data"]).apply(chmod)

    assert throttle.failed == 6 and throttle.attempts["/data/d/f09"] == 3
    assert [len(paths) for paths in store.flushed] == [FILES]  # no conflict: never applied
    assert live(ddb) == reference(setup, chmod)


def test_index_writes_throttled_past_the_retries_fail_the_drain_and_the_next_completes_it(
        ddb, capsys, caplog) -> None:
    setup, chmod, other = a_directory_of_files(), chmod_all(), [mkfile(300, "/data/other")]
    first = with_manifests(pack(setup))
    later = pack(chmod, strategy="prefix:2") + pack(other, strategy="prefix:2")
    assert later[0].group_id != later[-1].group_id
    assert handler.handler(event(*first), Context()) == {"batchItemFailures": []}
    throttle = FailPuts(handler.consumer().index.store.ddb, ["/data/d/f13"], times=10**6)
    capsys.readouterr()

    delivery = with_manifests(later, after=setup[-1].txid)
    # The messages are in the lake and acknowledged; the index stops at the throttled write,
    # says so in the log and counts it.
    assert handler.handler(event(*delivery), Context()) == {"batchItemFailures": []}
    assert "index drain failed" in caplog.text
    assert '"IndexDrainFailures":[1.0]' in capsys.readouterr().out.replace(" ", "")
    assert live(ddb)["/data/d/f13"]["perms"] == "0644"

    throttle.lift()  # the next message for the cluster (here the manifest, redelivered) drains
    assert handler.handler(event(*delivery[-1:], receive_count=2), Context()) == {
        "batchItemFailures": []}
    assert live(ddb) == reference(setup, chmod, other)
