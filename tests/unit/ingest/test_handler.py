"""The Lambda end to end on moto in-process: the real edit log in, lake objects, index entries,
log lines and EMF metrics out."""

from __future__ import annotations

import json
import time

from hdfs_events import names
from hdfs_events_cli.index_reader import IndexReader
from lambdas.ingest import handler
from tests.kit.ingest_aws import TABLE, emf_documents, lake_events, lake_lines, log_lines
from tests.kit.ingest_builders import pack, sample_events, with_manifests
from tests.kit.lambda_events import Context, event


def test_real_edit_log_lands_in_lake_partitioned_by_namenode_time(aws, capsys) -> None:
    events = sample_events()
    sent = pack(events, per_message=10)
    response = handler.handler(event(*sent), Context())
    assert response == {"batchItemFailures": []}
    keys = aws.lake_keys("raw/")
    # 2015-01-13 07:56:40 UTC .. 07:56:52: one hour partition, one object per message.
    assert all(k.startswith("raw/cluster=prod/dt=2015-01-13/hour=07/") for k in keys), keys
    assert sorted(k.rsplit("/", 1)[1] for k in keys) == sorted(
        f"{s.dedup_id}.jsonl.gz" for s in sent)
    lines = sorted(lake_events(aws), key=lambda d: (d["txid"], d["index"]))
    assert [json.dumps(d, separators=(",", ":"), ensure_ascii=False) for d in lines] == [
        e.to_json() for e in events]


def test_each_line_is_exactly_the_canonical_event(aws) -> None:
    events = sample_events()
    sent = pack(events[:5], per_message=5)
    handler.handler(event(*sent), Context())
    (key,) = aws.lake_keys("raw/")
    assert lake_lines(aws.get(key)) == [e.to_json() for e in events[:5]]


def test_metrics_are_emf_per_cluster_and_type_with_lag(aws, capsys) -> None:
    events = sample_events()
    handler.handler(event(*pack(events, per_message=10)), Context())
    docs = emf_documents(capsys.readouterr().out)
    main = [d for d in docs if names.METRIC_MESSAGES in d]
    assert len(main) == 1
    doc = main[0]
    assert doc[names.DIMENSION_CLUSTER] == "prod"
    directive = doc["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == names.METRICS_NAMESPACE
    assert [names.DIMENSION_CLUSTER] in directive["Dimensions"]
    assert doc[names.METRIC_MESSAGES] == [4.0]
    assert doc[names.METRIC_EVENTS] == [float(len(events))]
    lags = doc[names.METRIC_INGEST_LAG_MS]
    assert len(lags) == sum(e.timestamp is not None for e in events)
    assert min(lags) > 0  # the sample is from 2015
    by_type = {d["Type"]: d[names.METRIC_EVENTS] for d in docs if "Type" in d}
    assert by_type["CREATE"] == [float(sum(e.type == "CREATE" for e in events))]
    assert by_type["METADATA"] == [float(sum(e.type == "METADATA" for e in events))]


def test_log_mode_all_logs_one_line_per_event_with_its_key(aws, capsys, logs) -> None:
    events = sample_events()
    handler.handler(event(*pack(events, per_message=10)), Context())
    lines = [r for r in log_lines(capsys.readouterr().out) if r.get("message") == "hdfs event"]
    assert len(lines) == len(events)
    rename = next(r for r in lines if r["type"] == "RENAME")
    assert (rename["cluster"], rename["txid"], rename["index"], rename["path"],
            rename["dst_path"]) == ("prod", 7, 0, "/file_create", "/file_moved")


def test_log_mode_mutations_drops_times_and_summary_logs_one_line(aws, capsys, logs,
                                                                  monkeypatch) -> None:
    events = sample_events()
    monkeypatch.setenv(names.ENV_LOG_MODE, "mutations")
    handler.consumer.cache_clear()
    handler.handler(event(*pack(events, per_message=100)), Context())
    lines = [r for r in log_lines(capsys.readouterr().out) if r.get("message") == "hdfs event"]
    assert len(lines) == len(events) - 1  # one METADATA TIMES in the sample
    assert not any(r.get("metadata_type") == "TIMES" for r in lines)
    monkeypatch.setenv(names.ENV_LOG_MODE, "summary")
    handler.consumer.cache_clear()
    handler.handler(event(*pack(events, per_message=100)), Context())
    out = log_lines(capsys.readouterr().out)
    assert not [r for r in out if r.get("message") == "hdfs event"]
    (summary,) = [r for r in out if r.get("message") == "hdfs events"]
    assert summary["events"] == len(events) and summary["types"]["CREATE"] == 9


def test_redelivery_overwrites_the_same_object_and_leaves_the_index_unchanged(aws) -> None:
    sent = with_manifests(pack(sample_events(), per_message=8))
    handler.handler(event(*sent), Context())
    aws.apply_requests(handler.handler)
    objects = {k: aws.get(k) for k in aws.lake_keys()}
    items = sorted(aws.index_items(), key=lambda i: (i["parent"]["S"], i["name"]["S"]))
    assert len(items) == 6  # the live sample namespace (the concat sources, born and gone
    # within the one chunk, leave no delete marker)
    handler.handler(event(*sent, receive_count=2), Context())
    aws.apply_requests(handler.handler)
    assert {k: aws.get(k) for k in aws.lake_keys()} == objects
    assert sorted(aws.index_items(), key=lambda i: (i["parent"]["S"], i["name"]["S"])) == items


def test_index_holds_the_sample_namespace(aws) -> None:
    handler.handler(event(*with_manifests(pack(sample_events(), per_message=10))), Context())
    assert aws.apply_requests(handler.handler) == 1  # one request: the event invocation's
    reader = IndexReader(TABLE, "prod")
    listing = {e.name: e for e in reader.ls("/")}
    # Renamed twice to /file_moved (deleted in between), created again, concat sources gone.
    assert set(listing) == {"directory_mkdir", "file_concat_target", "file_create",
                            "file_moved", "file_symlink", "hard-lease-recovery-test"}
    assert listing["file_moved"].perms is not None  # carried over from /file_create
    assert listing["file_create"].size == 512  # created, closed at 1024, truncated to 512
    assert listing["directory_mkdir"].type == "DIRECTORY"
    assert listing["file_symlink"].type == "SYMLINK"
    # CLOSE after concat reports -1: the index says "unknown", not -1.
    assert listing["file_concat_target"].size is None
    # Created and concatenated away within one chunk: gone, and no delete marker written.
    assert reader.stat("/file_concat_0") is None
    assert reader.stat("/never_there") is None


def test_a_snapshot_after_a_gap_repairs_the_index(aws) -> None:
    """The real edit log, then edits purged before the agent read them (a GAP) and the
    agent's SNAPSHOT of the namespace: what vanished during the gap is gone from the index,
    what the listing shows is there as listed, and later changes apply on top."""
    from hdfs_events.event import EventType, HdfsEvent, INodeType

    events = sample_events()
    last = events[-1].txid
    gap = HdfsEvent("prod", last + 1, 0, EventType.GAP, "/", gap_end_txid=last + 50)
    t = last + 60  # the txid taken before the listing

    def listed(i: int, path: str, kind: INodeType, **kw) -> HdfsEvent:
        return HdfsEvent("prod", t, i, EventType.SNAPSHOT, path, inode_type=kind,
                         owner="etl", group="etl", perms="0755", mtime=5, atime=5, **kw)

    snapshot = [
        listed(0, "/", INodeType.DIRECTORY),
        listed(1, "/directory_mkdir", INodeType.DIRECTORY),
        listed(2, "/directory_mkdir/new_during_gap", INodeType.FILE, size=77, replication=2),
        listed(3, "/file_create", INodeType.FILE, size=4096, replication=3),
    ]
    after = HdfsEvent("prod", t + 1, 0, EventType.CLOSE, "/file_create", size=8192,
                      timestamp=9)
    handler.handler(event(*with_manifests(pack(events, per_message=10))), Context())
    aws.apply_requests(handler.handler)
    reader = IndexReader(TABLE, "prod")
    assert {e.name for e in reader.ls("/")} >= {"file_moved", "file_symlink"}
    handler.handler(event(*with_manifests(pack([gap, *snapshot, after], per_message=10),
                                          after=last)), Context())
    aws.apply_requests(handler.handler)
    assert {e.name for e in reader.ls("/")} == {"directory_mkdir", "file_create"}
    assert reader.stat("/file_moved").deleted  # vanished during the gap
    new = reader.stat("/directory_mkdir/new_during_gap")
    assert (new.type, new.size, new.replication, new.owner) == ("FILE", 77, 2, "etl")
    assert reader.stat("/file_create").size == 8192  # the CLOSE after the listing wins


def test_an_event_invocation_leaves_the_index_to_an_invocation_of_the_apply_queue(aws) -> None:
    """The next messages of an event invocation's FIFO groups wait for its lake writes only: it
    takes no lease and applies nothing, and asks the apply queue to, once per cluster."""
    before_ms = int(time.time() * 1000)
    handler.handler(event(*with_manifests(pack(sample_events(), per_message=10))), Context())
    assert aws.lake_keys("raw/")
    assert aws.index_items() == []
    assert not any(i[names.INDEX_PK]["S"] == names.position_partition("prod")
                   for i in aws.table_items())  # no lease was taken
    (request,) = aws.sqs.receive_message(
        QueueUrl=aws.queues.apply, MaxNumberOfMessages=10, VisibilityTimeout=0,
        MessageAttributeNames=["All"])["Messages"]
    # Named by the window (the second) it was sent in: its taker looks until that has ended.
    body = json.loads(request["Body"])
    assert body["cluster"] == "prod" and body["window_end_ms"] % 1000 == 0
    assert before_ms < body["window_end_ms"] <= int(time.time() * 1000) + 1000
    assert request["MessageAttributes"][names.KIND_ATTRIBUTE]["StringValue"] == \
        names.KIND_CONTINUE
    assert aws.apply_requests(handler.handler) == 1
    assert {i["name"]["S"] for i in aws.index_items()} >= {"file_moved", "file_symlink"}
