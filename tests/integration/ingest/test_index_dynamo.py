"""The index's concurrent writes against moto server over HTTP, as the Lambda reaches
DynamoDB: a real edit log indexes to the same state as the dict store does, throttled writes
are refused and retried, and writes throttled past botocore's retries stop applying ranges (logged,
counted), which the apply queue's invocation after the next message for the cluster completes."""

from __future__ import annotations

import io

import pytest

from hdfs_events.event import EventType, HdfsEvent, MetadataType
from lambdas.ingest import handler
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.index_table import DynamoIndexStore
from onprem_agent.editlog import read_ops
from onprem_agent.translate import translate_ops
from tests.kit.dynamodb_faults import FailWrites
from tests.kit.index_builders import apply_in_order, ev, live, mkdir, mkfile
from tests.kit.ingest_aws import TABLE, wait_for_the_next_window
from tests.kit.ingest_builders import pack, sample_events, with_manifests
from tests.kit.lambda_events import Context, event
from tests.kit.memory_stores import MemoryIndexStore
from tests.kit.replay import in_order_state
from tests.kit.workload import write_edit_log

FILES = 30


def generated_events(ops: int) -> list[HdfsEvent]:
    """Jobs writing through `_temporary`, renames into place, deletes of whole directories."""
    buf = io.StringIO()
    write_edit_log(buf, ops=ops, seed=5)
    return list(translate_ops(read_ops(io.BytesIO(buf.getvalue().encode())), "prod"))


def a_directory_of_files() -> list[HdfsEvent]:
    return [mkdir(1, "/data"), mkdir(2, "/data/d"),
            *(mkfile(10 + i, f"/data/d/f{i:02}") for i in range(FILES))]


def chmod_all() -> list[HdfsEvent]:
    return [ev(100 + i, EventType.METADATA, f"/data/d/f{i:02}",
               metadata_type=MetadataType.PERMS, perms="0600") for i in range(FILES)]


@pytest.mark.parametrize(("events", "chunk"), [
    pytest.param(sample_events(), 7, id="real edit log"),
    pytest.param(generated_events(400), 40, id="generated workload"),
])
def test_the_index_on_dynamodb_reaches_the_dict_stores_state(ddb, events, chunk) -> None:
    memory = MemoryIndexStore()
    for store in (DynamoIndexStore(TABLE), memory):
        apply_in_order(NamespaceIndex(store, ["/"], subtree_budget=3), events, chunk)
    assert live(ddb) == memory.live("prod") != {}


def test_throttled_writes_are_refused_then_retried_and_land(ddb) -> None:
    setup, chmod = a_directory_of_files(), chmod_all()
    store = DynamoIndexStore(TABLE)
    throttle = FailWrites(store.ddb, [f"/data/d/f{i:02}" for i in (0, 29)], times=3)
    apply_in_order(NamespaceIndex(store, ["/data"]), [*setup, *chmod])
    assert throttle.failed == 3
    assert live(ddb) == in_order_state([*setup, *chmod], "/data")


def test_index_writes_throttled_past_the_retries_fail_applying_ranges_and_the_next_completes_it(
        aws, ddb, capsys, caplog) -> None:
    setup, chmod, other = a_directory_of_files(), chmod_all(), [mkfile(300, "/data/other")]
    first = with_manifests(pack(setup))
    later = pack(chmod, strategy="prefix:2") + pack(other, strategy="prefix:2")
    assert later[0].group_id != later[-1].group_id
    assert handler.handler(event(*first), Context()) == {"batchItemFailures": []}
    assert aws.apply_requests(handler.handler) == 1
    throttle = FailWrites(handler.consumer().index.store.ddb, ["/data/d/f13"], times=10**6)
    capsys.readouterr()

    delivery = with_manifests(later, after=setup[-1].txid)
    # The messages are in the lake and acknowledged; the invocation applying their range stops
    # at the throttled write, says so in the log and counts it.
    assert handler.handler(event(*delivery), Context()) == {"batchItemFailures": []}
    assert aws.apply_requests(handler.handler) == 1
    assert "index apply failed" in caplog.text
    assert '"IndexApplyFailures":[1.0]' in capsys.readouterr().out.replace(" ", "")
    assert live(ddb)["/data/d/f13"]["perms"] == "0644"

    # The cluster's next message in a later window (here the manifest, redelivered) asks
    # again: applied. One in the same window would be a duplicate of the failed invocation's
    # request (hdfs_events/continue_request.py).
    throttle.lift()
    wait_for_the_next_window()
    assert handler.handler(event(*delivery[-1:], receive_count=2), Context()) == {
        "batchItemFailures": []}
    assert aws.apply_requests(handler.handler) == 1
    assert live(ddb) == in_order_state([*setup, *chmod, *other], "/data")
