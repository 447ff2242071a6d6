"""GAP and SNAPSHOT records, as the live agent puts them into the stream after the NameNode
purged edits it had not read, through the Lambda end to end on moto in-process: the log lines
(captured stdout JSON), the EMF metrics and the lake objects a user would look at.

The scenario: the real edit log (txids 4..85, January 2015), then edits 86..4999 purged (one
GAP found by the agent on 2026-11-21 at 10:00 UTC), then a snapshot of /data at T = 5200 (one
record per path, parents first), then ordinary events after T. The namespace index is off here:
what the index does with these records is its own suite's business.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from hdfs_events import lake_layout, names
from hdfs_events.event import EventType, HdfsEvent, INodeType
from lambdas.ingest import handler
from lambdas.ingest.logging_modes import GAP_MESSAGE
from tests.kit.ingest_aws import emf_documents, lake_events, lake_lines, log_lines
from tests.kit.ingest_builders import pack, sample_events
from tests.kit.lambda_events import Context, event

CLUSTER = "prod"
DETECTED_MS = int(datetime(2026, 11, 21, 10, 0, tzinfo=UTC).timestamp() * 1000)
LISTING_MS = DETECTED_MS + 2_000
GAP_TXID, GAP_END = 86, 5000
SNAPSHOT_TXID = 5200
FILES_PER_DIR = 40


def gap() -> HdfsEvent:
    return HdfsEvent(CLUSTER, GAP_TXID, 0, EventType.GAP, "/", timestamp=DETECTED_MS,
                     gap_end_txid=GAP_END)


def snapshot() -> list[HdfsEvent]:
    """/data listed as FileSystem.listStatus gives it: two directories of files and a symlink."""
    def record(index: int, path: str, inode: INodeType, **kw: object) -> HdfsEvent:
        return HdfsEvent(CLUSTER, SNAPSHOT_TXID, index, EventType.SNAPSHOT, path,
                         timestamp=LISTING_MS, inode_type=inode, owner="etl", group="hadoop",
                         perms="0755" if inode == INodeType.DIRECTORY else "0644",
                         mtime=DETECTED_MS - 86_400_000, atime=DETECTED_MS - 86_400_000, **kw)

    paths: list[tuple[str, INodeType, dict]] = [("/data", INodeType.DIRECTORY, {})]
    for d in ("a", "b"):
        paths.append((f"/data/{d}", INodeType.DIRECTORY, {}))
        paths += [(f"/data/{d}/part-{i:05d}", INodeType.FILE,
                   {"size": 1_000 * (i + 1), "replication": 3, "block_size": 134_217_728,
                    "erasure_coded": False}) for i in range(FILES_PER_DIR)]
    paths.append(("/data/latest", INodeType.SYMLINK, {"symlink_target": "/data/b"}))
    return [record(i, p, inode, **kw) for i, (p, inode, kw) in enumerate(paths)]


def after_snapshot() -> list[HdfsEvent]:
    """Changes made while (or after) the listing ran: ordinary events with NameNode times."""
    ts = LISTING_MS + 5_000
    return [HdfsEvent(CLUSTER, 5201, 0, EventType.CREATE, "/data/a/part-99999", timestamp=ts,
                      inode_type=INodeType.FILE, ctime=ts, owner="etl", group="hadoop",
                      perms="0644", replication=3, overwrite=False, block_size=134_217_728,
                      erasure_coded=False),
            HdfsEvent(CLUSTER, 5202, 0, EventType.CLOSE, "/data/a/part-99999",
                      timestamp=ts + 1_000, size=4096)]


def stream() -> list[HdfsEvent]:
    return [*sample_events(CLUSTER), gap(), *snapshot(), *after_snapshot()]


def deliver(*, mode: str, monkeypatch: pytest.MonkeyPatch, receive_count: int = 1) -> dict:
    """The stream packed as the agent packs it (prefix:2 groups), delivered in one invocation
    (a batch of up to 10 per invocation is the queue's setting; a bigger one only splits)."""
    monkeypatch.setenv(names.ENV_LOG_MODE, mode)
    monkeypatch.setenv(names.ENV_INDEX_PREFIXES, "")
    handler.consumer.cache_clear()
    sent = pack(stream(), per_message=100, strategy="prefix:2", sent_ms=DETECTED_MS + 3_000)
    return handler.handler(event(*sent, receive_count=receive_count), Context())


@pytest.mark.parametrize("mode", names.LOG_MODES)
def test_a_gap_is_one_error_line_with_what_was_lost_in_every_log_mode(
        aws, capsys, logs, monkeypatch, mode) -> None:
    assert deliver(mode=mode, monkeypatch=monkeypatch) == {"batchItemFailures": []}
    lines = log_lines(capsys.readouterr().out)
    errors = [r for r in lines if r["level"] == "ERROR"]
    assert len(errors) == 1, errors
    (line,) = errors
    assert line["message"] == GAP_MESSAGE
    assert (line["cluster"], line["txid"], line["gap_end_txid"], line["lost_txids"]) == (
        CLUSTER, GAP_TXID, GAP_END, GAP_END - GAP_TXID)
    assert line["type"] == "GAP" and line["detected_ms"] == DETECTED_MS
    assert line["message_id"]  # the SQS message that carried it, to find it in the lake
    # ... and no second, INFO line for it.
    assert not [r for r in lines if r.get("type") == "GAP" and r is not line]


def test_log_mode_all_and_mutations_log_each_snapshot_record(aws, capsys, logs,
                                                              monkeypatch) -> None:
    for mode in ("all", "mutations"):
        deliver(mode=mode, monkeypatch=monkeypatch)
        lines = [r for r in log_lines(capsys.readouterr().out) if r["message"] == "hdfs event"]
        snaps = [r for r in lines if r["type"] == "SNAPSHOT"]
        assert [(r["txid"], r["index"], r["path"]) for r in snaps] == [
            (e.txid, e.index, e.path) for e in snapshot()], mode
        symlink = next(r for r in snaps if r["path"] == "/data/latest")
        assert symlink["inode_type"] == "SYMLINK"
        assert next(r for r in snaps if r["path"] == "/data/a/part-00001")["size"] == 2000


def test_log_mode_summary_counts_snapshot_records_by_type(aws, capsys, logs,
                                                          monkeypatch) -> None:
    deliver(mode="summary", monkeypatch=monkeypatch)
    lines = log_lines(capsys.readouterr().out)
    assert not [r for r in lines if r["message"] == "hdfs event"]
    summaries = [r for r in lines if r["message"] == "hdfs events"]
    assert sum(r["types"].get("SNAPSHOT", 0) for r in summaries) == len(snapshot())
    assert sum(r["types"].get("GAP", 0) for r in summaries) == 1
    assert sum(r["events"] for r in summaries) == len(stream())


def test_metrics_count_the_gap_and_its_lost_txids_and_snapshots_by_type(
        aws, capsys, monkeypatch) -> None:
    deliver(mode="summary", monkeypatch=monkeypatch)
    docs = emf_documents(capsys.readouterr().out)
    (main,) = [d for d in docs if names.METRIC_MESSAGES in d]
    assert main[names.DIMENSION_CLUSTER] == CLUSTER
    assert [names.DIMENSION_CLUSTER] in main["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
    assert main[names.METRIC_STREAM_GAPS] == [1.0]
    assert main[names.METRIC_LOST_TXIDS] == [float(GAP_END - GAP_TXID)]
    assert main[names.METRIC_EVENTS] == [float(len(stream()))]  # = the lake's row count
    by_type = {d["Type"]: d[names.METRIC_EVENTS] for d in docs if "Type" in d}
    assert by_type["SNAPSHOT"] == [float(len(snapshot()))]
    assert by_type["GAP"] == [1.0]
    assert by_type["CREATE"] == [float(sum(e.type == "CREATE" for e in stream()))]


def test_ingest_lag_counts_only_namenode_times(aws, capsys, monkeypatch) -> None:
    deliver(mode="summary", monkeypatch=monkeypatch)
    (main,) = [d for d in emf_documents(capsys.readouterr().out)
               if names.METRIC_MESSAGES in d]
    lags = main[names.METRIC_INGEST_LAG_MS]
    hadoop = [e for e in stream() if e.type not in (EventType.GAP, EventType.SNAPSHOT)]
    # 25 NameNode-timestamped events (< 99, so every lag is published as is); the 84 snapshot
    # records and the GAP, stamped by the agent's clock, add none.
    assert len(lags) == sum(e.timestamp is not None for e in hadoop) == 25
    now_ms = datetime.now(UTC).timestamp() * 1000
    after = [now_ms - e.timestamp for e in after_snapshot()]
    assert sorted(lags)[:2] == pytest.approx(sorted(after), abs=120_000)


def test_a_stream_without_gaps_publishes_zero_gaps(aws, capsys) -> None:
    handler.handler(event(*pack(sample_events(CLUSTER), per_message=10)), Context())
    (main,) = [d for d in emf_documents(capsys.readouterr().out)
               if names.METRIC_MESSAGES in d]
    assert main[names.METRIC_STREAM_GAPS] == [0.0]
    assert main[names.METRIC_LOST_TXIDS] == [0.0]


def test_the_lake_keeps_gap_and_snapshot_records_partitioned_by_their_own_time(
        aws, monkeypatch) -> None:
    deliver(mode="all", monkeypatch=monkeypatch)
    lines = sorted(lake_events(aws), key=lambda d: (d["txid"], d["index"]))
    assert [json.dumps(d, separators=(",", ":"), ensure_ascii=False) for d in lines] == [
        e.to_json() for e in stream()]
    by_partition = {k.rsplit("/", 1)[0] for k in aws.lake_keys("raw/")}
    # The 2015 edit log in its hour; the gap, the snapshot and what followed on the agent's day.
    assert by_partition == {"raw/cluster=prod/dt=2015-01-13/hour=07",
                            "raw/cluster=prod/dt=2026-11-21/hour=10"}
    gap_keys = [k for k in aws.lake_keys("raw/cluster=prod/dt=2026-11-21/")
                if any(json.loads(x)["type"] == "GAP" for x in lake_lines(aws.get(k)))]
    (gap_key,) = gap_keys
    (line,) = [json.loads(x) for x in lake_lines(aws.get(gap_key)) if '"GAP"' in x]
    assert (line["txid"], line["index"], line["path"], line["gap_end_txid"]) == (
        GAP_TXID, 0, "/", GAP_END)
    assert all(d["gap_end_txid"] is None for d in lines if d["type"] != "GAP")


def test_a_redelivered_gap_and_snapshot_overwrite_their_objects(aws, monkeypatch) -> None:
    deliver(mode="all", monkeypatch=monkeypatch)
    objects = {k: aws.get(k) for k in aws.lake_keys()}
    deliver(mode="all", monkeypatch=monkeypatch, receive_count=2)
    assert {k: aws.get(k) for k in aws.lake_keys()} == objects


def test_a_gap_without_a_later_end_is_quarantined_naming_the_field(aws, capsys,
                                                                   monkeypatch) -> None:
    monkeypatch.setenv(names.ENV_INDEX_PREFIXES, "")
    handler.consumer.cache_clear()
    bad = HdfsEvent(CLUSTER, GAP_TXID, 0, EventType.GAP, "/", timestamp=DETECTED_MS,
                    gap_end_txid=GAP_TXID)  # nothing lost: not a gap
    sent = pack([bad], strategy="prefix:2", sent_ms=DETECTED_MS)
    assert handler.handler(event(*sent), Context()) == {"batchItemFailures": []}
    (key,) = aws.lake_keys(lake_layout.QUARANTINE_PREFIX)
    assert "gap_end_txid" in json.loads(aws.get(key))["reason"]
    assert not aws.lake_keys(lake_layout.RAW_PREFIX)
    (main,) = [d for d in emf_documents(capsys.readouterr().out)
               if names.METRIC_QUARANTINED in d]
    assert main[names.METRIC_QUARANTINED] == [1.0] and main[names.METRIC_STREAM_GAPS] == [0.0]
