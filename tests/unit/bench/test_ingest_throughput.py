"""bench.ingest_throughput: invocations carry the agent's manifests, index-on runs really apply the
events (each batch's range, by the apply queue's invocation its continue request starts),
DynamoDB calls are told apart by what they touch, calls made at once on several threads count
once in the time waited. The real handler against moto in-process."""

from __future__ import annotations

import functools
import json
import threading
import time

import pytest
from moto import mock_aws

from bench import ingest_throughput as bench
from hdfs_events import names
from hdfs_events.envelope import decode_message
from hdfs_events.event import EventType, HdfsEvent
from hdfs_events.manifest import decode_manifest, is_manifest


@functools.cache
def workload() -> list[HdfsEvent]:
    return bench.make_events(1500)


@pytest.fixture
def bench_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """run_config sets the function's environment, as the stack would: undone after the test."""
    for key in (names.ENV_LAKE_BUCKET, names.ENV_INDEX_TABLE, names.ENV_INDEX_PREFIXES,
                names.ENV_LOG_MODE, names.ENV_APPLY_QUEUE_URL):
        monkeypatch.setenv(key, "")


def test_every_invocation_ends_with_the_manifest_of_its_messages():
    batches = bench.lambda_events(workload(), per_message=20)
    assert len(batches) >= 3
    after = None
    seen: set[int] = set()
    for batch in batches:
        records = batch["Records"]
        assert len(records) == bench.BATCH  # Lambda's FIFO maximum
        *messages, last = records
        assert is_manifest(last["messageAttributes"])
        assert not any(is_manifest(r["messageAttributes"]) for r in messages)
        manifest = decode_manifest(last["body"])
        assert last["attributes"]["MessageGroupId"] == manifest.group_id
        assert manifest.after == after  # the ranges chain, from the start of the stream
        assert set(manifest.messages) == {
            r["attributes"]["MessageDeduplicationId"] for r in messages}
        txids = {e.txid for r in messages
                 for e in decode_message(r["body"], r["messageAttributes"])}
        assert all(manifest.covers(t) for t in txids) and max(txids) == manifest.end
        assert not txids & seen  # no txid's events split between two invocations
        seen |= txids
        after = manifest.end


def test_messages_end_where_a_txid_ends():
    events = [HdfsEvent("bench", txid, index, EventType.CLOSE, f"/d/f{txid}.{index}", size=1)
              for txid, count in ((1, 1), (2, 3), (3, 1), (4, 2)) for index in range(count)]
    messages = bench.message_events(events, per_message=2)
    assert [[(e.txid, e.index) for e in m] for m in messages] == [
        [(1, 0), (2, 0), (2, 1), (2, 2)], [(3, 0), (4, 0), (4, 1)]]


@pytest.mark.parametrize(("params", "purpose"), [
    ({"TableName": "t", "Item": {"parent": {"S": "prod!arrived#prod-1.0-9.0-x"},
                                 "name": {"S": "-"}}}, "arrival"),
    ({"TableName": "t", "Item": {"parent": {"S": "prod!manifests"},
                                 "name": {"S": "00000000000000000009.-.ab.00000"}}},
     "manifest"),
    ({"TableName": "t", "KeyConditionExpression": "#pk = :pk AND #sk >= :from",
      "ExpressionAttributeValues": {":pk": {"S": "prod!manifests"}, ":from": {"S": "0"}}},
     "manifest"),
    ({"TableName": "t", "Key": {"parent": {"S": "prod!position"}, "name": {"S": "-"}}},
     "position"),
    ({"RequestItems": {"t": {"Keys": [{"parent": {"S": "prod!arrived#a"},
                                       "name": {"S": "-"}}]}}}, "arrival"),
    # An entry's partition is its parent directory: a "!" in a path is still an entry.
    ({"TableName": "t", "Item": {"parent": {"S": "prod#/data/x!position"},
                                 "name": {"S": "f"}}}, "index"),
    ({"RequestItems": {"t": {"Keys": [{"parent": {"S": "prod#/"}, "name": {"S": "data"}}]}}},
     "index"),
    ({"TableName": "t", "KeyConditionExpression": "#pk = :pk",
      "ExpressionAttributeValues": {":pk": {"S": "prod#/data"}}}, "index"),
    ({"TableName": "t"}, "other"),
])
def test_dynamodb_requests_are_told_apart_by_what_they_touch(params, purpose):
    assert bench.ddb_purpose(params) == purpose


def test_index_on_run_applies_every_range_and_counts_its_requests(bench_env):
    batches = bench.lambda_events(workload(), per_message=10)[:2]
    with mock_aws():
        sequenced = bench.run_config("index on, log summary", batches, index=True,
                                     log_mode="summary")
    assert sequenced["index_entries"] > 0
    by_op = sequenced["dynamodb_by_op"]
    # Per batch: an arrival per message, the manifest; then the apply queue's invocation,
    # started by the batch's continue request: applying ranges' reads and writes.
    assert sequenced["apply_invocations"] == 1
    assert 0 < sequenced["event_ms"] < sequenced["total_ms"]
    assert by_op["arrival.PutItem"] == bench.BATCH - 1
    assert by_op["manifest.PutItem"] == 1
    assert by_op["arrival.BatchGetItem"] >= 1 and by_op["index.BatchWriteItem"] > 0
    assert sequenced["dynamodb_sequencer_calls_per_event"] > 0


def test_bench_fails_when_applying_ranges_leaves_the_index_unfed(bench_env):
    batches = bench.lambda_events(workload(), per_message=10)[:1]
    without_manifests = [{"Records": [r for r in b["Records"]
                                      if not is_manifest(r["messageAttributes"])]}
                         for b in batches]
    with mock_aws(), pytest.raises(AssertionError, match="invocation applied 0 range"):
        bench.run_config("index on, log summary", without_manifests, index=True,
                         log_mode="summary")


def test_index_off_run_counts_no_dynamodb(bench_env):
    batches = bench.lambda_events(workload(), per_message=10)[:1]
    with mock_aws():
        off = bench.run_config("index off, log summary", batches, index=False,
                               log_mode="summary")
    assert off["dynamodb_calls"] == 0 and off["index_entries"] == 0
    assert off["apply_invocations"] == 0  # no continue request: nothing to apply
    assert off["s3_calls"] == bench.BATCH - 1  # one lake object per event message
    assert off["events_per_invocation"] == len(bench.batch_events(batches[0]))
    # The batch's PutObjects, timed on the wire, in the consumer's write threads.
    assert 0 < off["parts_ms"]["s3"] <= off["parts_summed_ms"]["s3"]
    assert off["other_ms"] >= 0


def test_covered_time_is_the_union_of_the_intervals():
    assert bench.covered_s([]) == 0
    assert bench.covered_s([(3.0, 4.0), (0.0, 1.0), (0.5, 2.0)]) == 3.0
    assert bench.covered_s([(0.0, 10.0), (2.0, 3.0), (4.0, 5.0)]) == 10.0  # nested
    assert bench.covered_s([(0.0, 1.0), (1.0, 2.0)]) == 2.0  # touching


def test_calls_in_flight_at_once_count_once_as_time_waited():
    timer = bench.Timer()
    put = timer.wrap("s3", lambda: time.sleep(0.1))
    together = threading.Barrier(2)

    def writer() -> None:
        together.wait()
        put()

    start = time.perf_counter()
    threads = [threading.Thread(target=writer) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    split = bench.time_split(timer.take(), total_s=time.perf_counter() - start)
    # Two 100 ms calls on two threads at once: 100-odd ms waited, not 200.
    assert split["parts_summed_s"]["s3"] >= 0.2 and split["calls"]["s3"] == 2
    assert 0.1 <= split["parts_s"]["s3"] < 0.18
    assert split["aws_wait_s"] == split["parts_s"]["s3"]
    assert split["other_s"] >= 0


def test_time_waited_on_dynamodb_is_less_than_its_concurrent_calls_add_up(bench_env):
    batches = bench.lambda_events(workload(), per_message=10)[:1]
    with mock_aws():
        on = bench.run_config("index on, log summary", batches, index=True,
                              log_mode="summary", latency_s=0.02)
    # The batch's 9 arrivals go at once, 20 ms each: summed, they count 160 ms the
    # invocation did not wait.
    waited, summed = on["parts_ms"]["dynamodb"], on["parts_summed_ms"]["dynamodb"]
    assert summed - waited > 100
    assert summed / on["dynamodb_calls"] >= 20  # per call: the added latency and moto's time
    assert max(on["parts_ms"][p] for p in bench.SERVICES) <= on["aws_wait_ms"]
    assert on["aws_wait_ms"] + on["own_ms"] == pytest.approx(on["total_ms"])
    assert on["other_ms"] >= 0


def test_freshness_counts_index_writes_per_indexed_event_apart_from_the_sequencer():
    from bench.freshness import dynamodb_split

    split = dynamodb_split({"index.PutItem": 30, "index.BatchGetItem": 6, "index.Query": 2,
                            "arrival.PutItem": 40, "arrival.BatchGetItem": 10,
                            "manifest.PutItem": 5, "manifest.Query": 20,
                            "position.UpdateItem": 30},
                           indexed=20, messages=40, manifests=5, invocations=10)
    assert split["dynamodb_index_writes"] == 30 and split["dynamodb_index_reads"] == 8
    assert split["dynamodb_writes_per_indexed_event"] == 1.5  # the entries' writes alone
    assert split["dynamodb_reads_per_indexed_event"] == 0.4
    assert split["dynamodb_sequencer_writes"] == 75 and split["dynamodb_sequencer_reads"] == 30
    assert split["sequencer_arrival_writes_per_message"] == 1.0
    assert split["sequencer_manifest_writes_per_manifest"] == 1.0
    assert split["sequencer_position_writes_per_invocation"] == 3.0
    assert split["sequencer_reads_per_invocation"] == 3.0


def test_index_apply_bench_runs_tiny_and_counts_what_the_index_sends(tmp_path, monkeypatch):
    from bench import index_apply
    monkeypatch.chdir(tmp_path)
    assert index_apply.main(["--ops", "400", "--latency-ms", "1", "--no-baseline"]) == 0
    result = json.loads((tmp_path / "bench-out" / "index_apply.json").read_text())["current"]
    assert result["indexed_events"] > 50 and result["live_entries"] > 0
    assert result["requests"]["BatchWriteItem"] > 0
    assert 0 < result["round_trips_per_1000"] <= result["requests_per_1000"]
