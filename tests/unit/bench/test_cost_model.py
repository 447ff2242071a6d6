"""The cost model's arithmetic on hand-computed inputs."""

from __future__ import annotations

import pytest

from bench.cost_model import BILLION, Design, Prices, Q, Setting, bill, total


def _q(value: float) -> Q:
    return Q(value, "test")


def design(**overrides: float) -> Design:
    values = dict(events_per_message=1000, send_requests_per_event=0.001, message_bytes=60_000,
                  lambda_ms_per_event=0.01, index_ms_per_indexed_event=0.1,
                  ddb_calls_per_indexed_event=2, puts_per_message=1, raw_bytes_per_event=20,
                  parquet_bytes_per_event=10, ddb_writes_per_indexed_event=1.5,
                  ddb_reads_per_indexed_event=0.5, ddb_sequencer_writes_per_message=0,
                  ddb_sequencer_reads_per_message=0, log_bytes_per_event=300,
                  glue_rows_per_worker_s=100_000, continue_requests_per_event_invocation=1,
                  apply_invocations_per_cluster_second=1, apply_s_per_cluster_second=1.0,
                  looks_per_cluster_second=10)
    values.update(overrides)
    return Design(name="t", **{k: _q(v) for k, v in values.items()})


PRICES = Prices(sqs_fifo_per_million=0.5, lambda_per_million=0.2, lambda_gb_second_arm=1e-5,
                s3_put_per_thousand=0.005, s3_get_per_thousand=0.0004, s3_gb_month=0.02,
                ddb_write_per_million=1.0, ddb_read_per_million=0.25, glue_dpu_hour=0.5,
                logs_ingest_gb=0.5, metric_month=0.3)


def lines(d: Design, s: Setting | None = None) -> dict[str, tuple[float, float]]:
    s = s or Setting(coverage=0.2, events_per_s_per_cluster=2000)
    return {f"{x.service}: {x.item}": (x.quantity, x.usd) for x in bill(d, s, PRICES)}


def test_sqs_requests_of_packed_messages():
    got = lines(design())
    # 1e9 events / 1000 per message = 1e6 messages; 1e6 send chunks.
    assert got["SQS: SendMessageBatch (64 KiB chunks)"] == pytest.approx((1e6, 0.5))
    # 1e5 receives of 10 x 60,000 bytes = 600,000 bytes = ceil(9.16) = 10 chunks each.
    assert got["SQS: ReceiveMessage (64 KiB chunks)"] == pytest.approx((1e6, 0.5))
    assert got["SQS: DeleteMessageBatch"] == pytest.approx((1e5, 0.05))


def test_one_event_per_message_pays_per_event():
    got = lines(design(events_per_message=1, send_requests_per_event=0.1, message_bytes=400,
                       puts_per_message=1))
    assert got["SQS: SendMessageBatch (64 KiB chunks)"] == pytest.approx((1e8, 50.0))
    # 10 x 400 bytes fit one chunk: one billed request per receive of 10.
    assert got["SQS: ReceiveMessage (64 KiB chunks)"] == pytest.approx((1e8, 50.0))
    assert got["Lambda: invocations"] == pytest.approx((1e8, 20.0))
    assert got["S3: PutObject raw/ (one per message-hour)"] == pytest.approx((1e9, 5000.0))


def test_lambda_duration_counts_cpu_index_calls_and_puts():
    got = lines(design(), Setting(coverage=0.2, s3_put_ms=25, ddb_call_ms=5))
    # 1e9 events x 0.01 ms CPU = 1e7 ms; 2e8 indexed x (0.1 ms + 2 calls x 5 ms) = 2.02e9 ms;
    # 1e6 messages x 1 put x 25 ms = 2.5e7 ms. 2.055e9 ms = 2.055e6 GB-s at 1 GB.
    assert got["Lambda: duration"] == pytest.approx((2.055e6, 20.55))
    assert got["Lambda: invocations"] == pytest.approx((1e5, 0.02))


def test_storage_index_glue_and_logs():
    got = lines(design())
    gib = 1024 ** 3
    assert got["S3: storage raw gzip, 1 month"] == pytest.approx((20e9 / gib, 20e9 / gib * 0.02))
    assert got["S3: storage curated Parquet, 1 month"][0] == pytest.approx(10e9 / gib)
    # 2e8 indexed events x 1.5 writes = 3e8 WRU at USD 1 per million.
    assert got["DynamoDB: index writes (20% indexed)"] == pytest.approx((3e8, 300.0))
    assert got["DynamoDB: index reads (20% indexed)"] == pytest.approx((1e8, 25.0))
    # 1e9 rows / 1e5 rows/s = 1e4 s = 2.777 DPU-hours.
    assert got["Glue: compaction"] == pytest.approx((1e4 / 3600, 1e4 / 3600 * 0.5))
    assert got["CloudWatch: Logs ingestion"] == pytest.approx((300e9 / gib, 300e9 / gib * 0.5))
    assert got["CloudWatch: custom metrics"] == pytest.approx((24, 7.2))


def test_no_index_coverage_costs_no_dynamodb():
    got = lines(design(), Setting(coverage=0.0))
    assert got["DynamoDB: index writes (0% indexed)"] == (0.0, 0.0)


def test_total_is_the_sum_of_lines_and_scales_with_events():
    d = design()
    one = bill(d, Setting(), PRICES)
    assert total(one) == pytest.approx(sum(x.usd for x in one))
    # Twice the events at the same monthly rate: twice every line, metrics included.
    two = bill(d, Setting(), PRICES, events=2 * BILLION)
    assert total(two) == pytest.approx(2 * total(one))


def test_assumed_counts_are_labelled():
    assert Q(1, "ASSUMED: same consumer").assumed
    assert not Q(1, "freshness.json: puts").assumed


def test_the_sequencer_is_billed_per_message_when_the_index_is_on():
    d = design(ddb_sequencer_writes_per_message=1.3, ddb_sequencer_reads_per_message=0.2)
    on = lines(d, Setting(coverage=0.2))
    # 2e8 indexed x 1.5 + 1e6 messages x 1.3 writes; 2e8 x 0.5 + 1e6 x 0.2 reads.
    assert on["DynamoDB: index writes (20% indexed)"][0] == pytest.approx(3e8 + 1.3e6)
    assert on["DynamoDB: index reads (20% indexed)"][0] == pytest.approx(1e8 + 2e5)
    off = lines(d, Setting(coverage=0.0))
    assert off["DynamoDB: index writes (0% indexed)"][0] == 0


APPLY_LINES = ("SQS: SendMessage continue requests", "SQS: ReceiveMessage apply queue",
               "SQS: DeleteMessageBatch apply queue", "Lambda: apply invocations",
               "Lambda: apply looking (window - index work)",
               "DynamoDB: apply looks' lease UpdateItems", "DynamoDB: apply looks' manifests Query")


def test_every_event_invocation_sends_a_continue_request_and_one_a_cluster_second_is_taken():
    got = lines(design())
    # 1e6 messages / 10 per invocation = 1e5 event invocations, one request each (one cluster),
    # billed though SQS drops all but the window's first.
    assert got["SQS: SendMessage continue requests"] == pytest.approx((1e5, 0.05))
    # 1e9 events at 2,000 events/s = 5e5 cluster-seconds: a request queued and taken in each.
    assert got["SQS: ReceiveMessage apply queue"] == pytest.approx((5e5, 0.25))
    assert got["SQS: DeleteMessageBatch apply queue"] == pytest.approx((5e5, 0.25))
    assert got["Lambda: apply invocations"] == pytest.approx((5e5, 0.1))


def test_apply_looks_lease_the_position_and_query_manifests_ten_times_a_cluster_second():
    got = lines(design())
    # 5e5 cluster-seconds x 10 looks = 5e6 looks: 2 UpdateItems (USD 1 per million WRU) and
    # 1 Query (USD 0.25 per million RRU) each.
    assert got["DynamoDB: apply looks' lease UpdateItems"] == pytest.approx((1e7, 10.0))
    assert got["DynamoDB: apply looks' manifests Query"] == pytest.approx((5e6, 1.25))


def test_apply_invocations_are_billed_the_window_beyond_the_index_work_already_counted():
    slow = Setting(coverage=0.2, events_per_s_per_cluster=100, ddb_call_ms=5)
    got = lines(design(), slow)
    # 100 events/s x 20% = 20 indexed events/s x (0.1 ms + 2 calls x 5 ms) = 0.202 s of index
    # work a second, already in the duration line; the window's other 0.798 s is added for
    # 1e9 / 100 = 1e7 cluster-seconds: 7.98e6 GB-s at 1 GB, USD 1e-5 each.
    assert got["Lambda: apply looking (window - index work)"] == pytest.approx((7.98e6, 79.8))
    assert got["Lambda: duration"] == pytest.approx((2.055e6, 20.55))  # unchanged by the rate
    # At 2,000 events/s the index works 4.04 s a cluster-second: past the window, nothing added.
    assert lines(design())["Lambda: apply looking (window - index work)"] == (0.0, 0.0)


def test_the_rate_per_cluster_sets_the_apply_queue_bill():
    at_1000 = lines(design(), Setting(coverage=0.0001, events_per_s_per_cluster=1000))
    at_4000 = lines(design(), Setting(coverage=0.0001, events_per_s_per_cluster=4000))
    for line in ("SQS: ReceiveMessage apply queue", "Lambda: apply invocations",
                 "DynamoDB: apply looks' manifests Query"):
        assert at_1000[line][0] == pytest.approx(4 * at_4000[line][0])
    # Sent per event invocation, whatever the rate.
    assert (at_1000["SQS: SendMessage continue requests"]
            == pytest.approx(at_4000["SQS: SendMessage continue requests"]))


def test_without_the_index_or_an_applier_there_is_no_apply_queue():
    off = lines(design(), Setting(coverage=0.0))
    baseline = lines(design(continue_requests_per_event_invocation=0,
                            apply_invocations_per_cluster_second=0,
                            apply_s_per_cluster_second=0, looks_per_cluster_second=0))
    for line in APPLY_LINES:
        assert off[line] == (0.0, 0.0), line
        assert baseline[line] == (0.0, 0.0), line
