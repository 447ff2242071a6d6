"""Lake keys and partitions: deterministic per message, from NameNode time, never the clock."""

from __future__ import annotations

import gzip

import pytest

from hdfs_events.event import EventType, HdfsEvent, MetadataType
from lambdas.ingest.lake import lake_objects, object_name, partition_times
from lambdas.ingest.settings import ConsumerSettings, SettingsError, parse_prefixes

H = 3_600_000
T = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC


def ev(txid: int, ts: int | None, type_: EventType = EventType.CLOSE) -> HdfsEvent:
    kw = {"metadata_type": MetadataType.TIMES, "mtime": 1} if type_ == EventType.METADATA else {}
    return HdfsEvent(cluster="prod", txid=txid, index=0, type=type_, path="/p", timestamp=ts,
                     **kw)


def test_event_without_timestamp_takes_the_latest_in_its_message() -> None:
    events = [ev(1, T), ev(2, None, EventType.METADATA), ev(3, T + 5)]
    assert partition_times(events, sent_timestamp_ms=0) == [T, T + 5, T + 5]


def test_message_without_any_timestamp_uses_sent_timestamp() -> None:
    events = [ev(1, None, EventType.METADATA), ev(2, None, EventType.APPEND)]
    assert partition_times(events, sent_timestamp_ms=T) == [T, T]


def test_message_spanning_hours_becomes_one_object_per_hour_with_one_name() -> None:
    events = [ev(1, T), ev(2, T + H), ev(3, T + H + 1)]
    objects = lake_objects(events, [e.to_json() for e in events], dedup_id="prod-1.0-3.0-3",
                           sent_timestamp_ms=T)
    assert [o.key for o in objects] == [
        "raw/cluster=prod/dt=2023-11-14/hour=22/prod-1.0-3.0-3.jsonl.gz",
        "raw/cluster=prod/dt=2023-11-14/hour=23/prod-1.0-3.0-3.jsonl.gz"]
    assert [o.event_count for o in objects] == [1, 2]
    assert gzip.decompress(objects[1].body).decode().splitlines() == [
        events[1].to_json(), events[2].to_json()]


def test_same_message_gives_byte_identical_objects() -> None:
    events = [ev(1, T), ev(2, T + 1)]
    lines = [e.to_json() for e in events]
    first = lake_objects(events, lines, dedup_id="d", sent_timestamp_ms=T)
    again = lake_objects(events, lines, dedup_id="d", sent_timestamp_ms=T + 99_999)
    assert first == again


def test_object_name_escapes_unsafe_dedup_ids_without_collisions() -> None:
    a = object_name("prod-1/2", [ev(1, T)])
    b = object_name("prod-1?2", [ev(1, T)])
    assert "/" not in a.removesuffix(".jsonl.gz") and a != b
    assert object_name(None, [ev(7, T), ev(9, T)]) == "prod-7.0-9.0-2.jsonl.gz"


def test_settings_name_the_bad_variable() -> None:
    with pytest.raises(SettingsError, match="LAKE_BUCKET"):
        ConsumerSettings.from_env({})
    with pytest.raises(SettingsError, match="EVENT_LOG_MODE='loud'"):
        ConsumerSettings.from_env({"LAKE_BUCKET": "b", "EVENT_LOG_MODE": "loud"})
    with pytest.raises(SettingsError, match="not an absolute HDFS path"):
        parse_prefixes("/data,user")
    senders = '{"prod": ["arn:aws:iam::123456789012:user/hdfs-events-prod-agent-prod"]}'
    indexed = {"LAKE_BUCKET": "b", "INDEX_TABLE": "t", "CLUSTER_SENDERS": senders,
               "INDEX_PREFIXES": " /data/ , /user"}
    with pytest.raises(SettingsError, match="INDEX_PREFIXES is set but APPLY_QUEUE_URL is not"):
        ConsumerSettings.from_env(indexed)
    s = ConsumerSettings.from_env({**indexed, "APPLY_QUEUE_URL": "https://sqs/apply.fifo"})
    assert s.index_prefixes == ("/data", "/user") and s.index_enabled
    assert not ConsumerSettings.from_env({"LAKE_BUCKET": "b", "INDEX_TABLE": "t",
                                  "CLUSTER_SENDERS": senders}).index_enabled
    with pytest.raises(SettingsError, match="CLUSTER_SENDERS is not set"):
        ConsumerSettings.from_env({"LAKE_BUCKET": "b"})
    with pytest.raises(SettingsError, match="cluster 'prod' needs a list of IAM user ARNs"):
        ConsumerSettings.from_env({"LAKE_BUCKET": "b", "CLUSTER_SENDERS": '{"prod": ["alice"]}'})
