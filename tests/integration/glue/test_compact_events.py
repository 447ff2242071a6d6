"""compact_events on a local SparkSession over raw objects laid out as the consumer writes
them in the moto server's S3, read and published through S3A: exactly-once output, idempotent
re-runs, late data, quarantine, atomic publication."""

from __future__ import annotations

import dataclasses
import gzip
import itertools
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.compaction_run import CompactionReport, CompactionSettings, compact
from glue_jobs.curated_io import location_key, read_curated
from glue_jobs.layout import LOCAL_CATALOG_KEY, QUARANTINE_GLUE_PREFIX
from glue_jobs.storage import LakeStore, ObjectInfo
from hdfs_events.event import HdfsEvent
from hdfs_events.lake_layout import EVENTS_PREFIX
from tests.integration.glue.frames import assert_frames_equal, curated_frame
from tests.integration.glue.generated_events import DAY_MS, generated_events
from tests.integration.glue.lake import JAN_13_2015_MS, RawLake

pytestmark = pytest.mark.slow
SENT = JAN_13_2015_MS + 8 * 3_600_000  # 08:00 on the sample's day


def run(spark, lake: RawLake, **overrides) -> CompactionReport:
    store = lake.store
    settings = dataclasses.replace(CompactionSettings(), **overrides)
    return compact(spark, store, store, JsonFileCatalog(store, LOCAL_CATALOG_KEY), settings)


def curated(spark, lake: RawLake):
    store = lake.store
    return read_curated(spark, JsonFileCatalog(store, LOCAL_CATALOG_KEY).locations())


def day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def expected_dt(e: HdfsEvent, sent_ms: int) -> str:
    """Every test message here has its events' times and its sent time on one day."""
    return day(e.timestamp if e.timestamp is not None else sent_ms)


def test_sample_edit_log_compacts_to_exactly_its_events(spark, lake, sample_events):
    lake.write_message("m1", sample_events[:20], sent_ms=SENT)
    lake.write_message("m2", sample_events[20:], sent_ms=SENT)

    report = run(spark, lake)

    assert report.events_added == len(sample_events) == 32
    assert report.quarantined_lines == report.quarantined_objects == 0
    assert_frames_equal(curated(spark, lake),
                        curated_frame(spark, [(e, expected_dt(e, SENT)) for e in sample_events]))


def test_a_newer_minors_fields_stay_in_the_raw_line_and_the_table_holds_the_known(
        spark, lake, sample_events):
    # The consumer writes a newer minor's event canonical, then its new fields as sent
    # (docs/contract.md, "Versions"): this compaction is not that minor's, it keeps the raw line.
    lines = [e.to_json()[:-1] + ',"storage_policy":"HOT","ec":{"k":[1,2]}}'
             for e in sample_events[:10]]
    lake.write_lines("c1", "2015-01-13", "08", "next-minor", lines)

    report = run(spark, lake)

    assert (report.events_added, report.quarantined_lines) == (10, 0)
    assert_frames_equal(curated(spark, lake), curated_frame(
        spark, [(e, expected_dt(e, SENT)) for e in sample_events[:10]]))
    assert lake.keys("raw/")  # the raw lines stay for a compaction with the newer schema


def parquet_files(lake: RawLake) -> dict[tuple[str, str], list[str]]:
    """The Parquet keys of each partition at its catalog location."""
    store = lake.store
    return {key: [k for k in lake.keys(location_key(store, location) or "?")
                  if k.endswith(".parquet")]
            for key, location in JsonFileCatalog(store, LOCAL_CATALOG_KEY).locations().items()}


def catalog_bytes(lake: RawLake) -> bytes | None:
    return lake.read(LOCAL_CATALOG_KEY)


def test_duplicates_within_and_across_files_and_hours_appear_once(spark, lake):
    events = generated_events("c1", count=400, start_ms=JAN_13_2015_MS, span_ms=6 * 3_600_000)
    # Within one object: the consumer never writes this, a buggy agent batch could.
    m1 = lake.write_message("m1", events[:200] + events[150:200], sent_ms=SENT)
    # Across objects: an agent restart re-sends events 100..300 as a new message; its
    # timestamp-less events go with that message's latest event, into another hour.
    m2 = lake.write_message("m2", events[100:300], sent_ms=SENT + 3_600_000)
    lake.write_message("m3", events[300:], sent_ms=SENT)
    assert {k.rsplit("/", 2)[1] for k in m2} - {k.rsplit("/", 2)[1] for k in m1}

    report = run(spark, lake)

    assert report.events_read == 250 + 200 + 100
    assert report.events_added == 400
    assert report.duplicates_dropped == 150
    assert_frames_equal(curated(spark, lake),
                        curated_frame(spark, [(e, expected_dt(e, SENT)) for e in events]))


def test_resent_event_without_timestamp_counts_once_across_days(spark, lake, sample_events):
    metadata = [e for e in sample_events if e.timestamp is None]
    assert metadata, "the sample has METADATA and APPEND events, which carry no timestamp"
    # The first copy is sent on the 13th; the re-send after an agent crash reaches SQS after
    # midnight, so the consumer files it under the 14th.
    lake.write_message("first", metadata, sent_ms=SENT)
    lake.write_message("resend-same-run", metadata, sent_ms=SENT + 17 * 3_600_000)
    first = run(spark, lake)
    lake.write_message("resend-next-run", metadata, sent_ms=SENT + 20 * 3_600_000)
    second = run(spark, lake)

    assert (first.events_added, second.events_added) == (len(metadata), 0)
    rows = curated(spark, lake)
    assert rows.count() == len(metadata)
    assert {r["dt"] for r in rows.select("dt").collect()} == {"2015-01-13"}


def test_lookback_bound_is_what_exactly_once_covers(spark, lake, sample_events):
    """A re-send filed more days away than lookback_days is not recognised: the documented
    bound. With lookback 0 a copy filed the next day in a later run is kept twice."""
    metadata = [e for e in sample_events if e.timestamp is None]
    lake.write_message("first", metadata, sent_ms=SENT)
    run(spark, lake, lookback_days=0)
    lake.write_message("late-resend", metadata, sent_ms=SENT + 20 * 3_600_000)
    report = run(spark, lake, lookback_days=0)
    assert report.events_added == len(metadata)
    assert curated(spark, lake).count() == 2 * len(metadata)


def test_rerun_without_new_raw_data_changes_nothing(spark, lake, sample_events):
    lake.write_message("m1", sample_events, sent_ms=SENT)
    run(spark, lake)
    before, files = catalog_bytes(lake), parquet_files(lake)

    again = run(spark, lake)

    assert again.objects_read == 0 and again.events_added == 0
    assert catalog_bytes(lake) == before
    assert parquet_files(lake) == files


def test_redelivered_message_overwriting_its_object_publishes_nothing(spark, lake, sample_events):
    lake.write_message("m1", sample_events[:5], sent_ms=SENT)
    run(spark, lake)
    before = catalog_bytes(lake)
    time.sleep(1.1)  # S3's LastModified has whole seconds: the overwrite must show as a change
    lake.write_message("m1", sample_events[:5], sent_ms=SENT)  # SQS redelivery: same object

    report = run(spark, lake)

    assert report.objects_read == 1 and report.events_read == 5
    assert report.events_added == 0 and report.partitions_published == 0
    assert catalog_bytes(lake) == before
    # The partition was written whole again before its rows were counted: that copy is gone.
    assert not [k for k in lake.keys(EVENTS_PREFIX) if f"/run={report.run_id}/" in k]


def test_late_objects_recompact_their_partition_once(spark, lake):
    events = generated_events("c1", count=300, start_ms=JAN_13_2015_MS, span_ms=DAY_MS)
    lake.write_message("m1", events[:200], sent_ms=SENT)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    store = lake.store
    catalog = JsonFileCatalog(store, LOCAL_CATALOG_KEY)
    compact(spark, store, store, catalog, CompactionSettings(), now=t0)
    first_location = catalog.locations()[("c1", "2015-01-13")]

    # Late objects for old hours of the same day, plus a re-send of some compacted events.
    lake.write_message("late", events[200:] + events[:50], sent_ms=SENT)
    report = compact(spark, store, store, catalog, CompactionSettings(), now=t0 + timedelta(hours=1))

    assert report.events_added == 100 and report.partitions_published == 1
    assert catalog.locations()[("c1", "2015-01-13")] != first_location
    assert_frames_equal(curated(spark, lake),
                        curated_frame(spark, [(e, expected_dt(e, SENT)) for e in events]))
    assert len(parquet_files(lake)[("c1", "2015-01-13")]) == 1
    # The superseded run stays for readers that listed it before the switch...
    first_key = location_key(store, first_location)
    assert first_key and lake.keys(first_key)
    # ...and goes once its grace period is over and the partition is compacted again.
    lake.write_message("later", generated_events("c1", count=10, start_ms=JAN_13_2015_MS,
                                                 span_ms=1000, first_txid=9000), sent_ms=SENT)
    later = compact(spark, store, store, catalog, CompactionSettings(), now=t0 + timedelta(hours=30))
    assert later.runs_removed == 2
    assert lake.keys(first_key) == []


def test_empty_input_publishes_nothing(spark, lake):
    report = run(spark, lake)
    assert (report.objects_read, report.events_added, report.partitions_published) == (0, 0, 0)
    assert catalog_bytes(lake) is None
    lake.write_lines("c1", "2015-01-13", "08", "empty", [])  # a valid gzip of no lines
    report = run(spark, lake)
    assert (report.objects_read, report.events_added, report.quarantined_objects) == (1, 0, 0)


def test_corrupt_objects_and_lines_are_quarantined_with_reasons(spark, lake, sample_events):
    good = [e.to_json() for e in sample_events[:10]]
    d = json.loads(good[0])
    wrong_type = json.dumps({**d, "txid": "four"})
    missing_key = json.dumps({k: v for k, v in d.items() if k != "owner"})
    unknown_type = json.dumps({**d, "index": 9, "type": "CHMOD"})
    null_path = json.dumps({**d, "index": 10, "path": None})
    relative_path = json.dumps({**d, "index": 11, "path": "data/x"})
    other_cluster = json.dumps({**d, "cluster": "c2"})
    lake.write_lines("c1", "2015-01-13", "07", "mixed",
                     [*good, "{not json", wrong_type, missing_key, unknown_type, null_path,
                      relative_path, other_cluster])
    lake.write_bytes("c1", "2015-01-13", "07", "not-gzip", b"this is not gzip at all")
    truncated = gzip.compress("\n".join(e.to_json() for e in sample_events[10:]).encode())
    lake.write_bytes("c1", "2015-01-13", "07", "truncated", truncated[: len(truncated) // 2])

    report = run(spark, lake)

    assert (report.quarantined_objects, report.quarantined_lines) == (2, 7)
    assert report.events_added == 10
    quarantined = lake.keys(QUARANTINE_GLUE_PREFIX)
    reasons = sorted(lake.read(k).decode() for k in quarantined if k.endswith(".reason.txt"))
    assert len(reasons) == 2
    assert "not valid gzip" in reasons[0] or "not valid gzip" in reasons[1]
    assert any("truncated" in r for r in reasons)
    lines = [json.loads(x) for k in quarantined
             if k.startswith(QUARANTINE_GLUE_PREFIX + "lines/") and k.endswith(".json.gz")
             for x in gzip.decompress(lake.read(k)).decode().splitlines()]
    by_line = {x["line"]: x["reason"] for x in lines}
    assert by_line[wrong_type] == "field 'txid' must be int, got 'four'"
    assert by_line[missing_key] == "missing key(s) owner"
    # The contract's own rules come from hdfs_events.validation, as the consumer's do.
    assert by_line[unknown_type] == "'CHMOD' is not a valid EventType"
    assert by_line["{not json"] == "line is not a JSON object"
    assert by_line[null_path] == "missing required field 'path'"
    assert by_line[relative_path] == "field 'path' must be an absolute HDFS path, got 'data/x'"
    assert by_line[other_cluster] == "event of cluster 'c2' in the partition of cluster 'c1'"
    # Quarantined once: the next run does not read them again.
    assert run(spark, lake).objects_read == 0


class ListedEarlier:
    """The lake as a listing taken before the `unseen` keys were written sees it (the consumer
    writes on while a run reads); everything else is the lake's own."""

    def __init__(self, store: LakeStore, unseen: set[str]) -> None:
        self._store, self._unseen = store, unseen

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def list_objects(self, prefix: str) -> Iterator[ObjectInfo]:
        return (o for o in self._store.list_objects(prefix) if o.key not in self._unseen)


def test_objects_written_during_a_run_are_compacted_once_and_a_damaged_one_stalls_nothing(
        spark, lake):
    hour = 3_600_000
    at7 = generated_events("c1", count=40, start_ms=JAN_13_2015_MS + 7 * hour, span_ms=60_000)
    at8 = generated_events("c1", count=40, start_ms=JAN_13_2015_MS + 8 * hour, span_ms=60_000,
                           first_txid=2000)
    lake.write_message("m7", at7[:30], sent_ms=SENT)
    lake.write_message("m8", at8, sent_ms=SENT)
    # Written into the same hour folders after the run's listing: a good object, a damaged one.
    unseen = set(lake.write_message("late7", at7[30:], sent_ms=SENT))
    unseen.add(lake.write_bytes("c1", "2015-01-13", "08", "late8", b"not gzip"))
    store = lake.store
    catalog = JsonFileCatalog(store, LOCAL_CATALOG_KEY)

    first = compact(spark, ListedEarlier(store, unseen), store, catalog, CompactionSettings())

    # The damaged object is not the run's to judge: it neither fails the run nor is quarantined.
    assert (first.objects_read, first.quarantined_objects) == (2, 0)
    second = compact(spark, store, store, catalog, CompactionSettings())
    assert (second.objects_read, second.quarantined_objects) == (2, 1)
    assert first.events_added + second.events_added == 80
    assert_frames_equal(curated(spark, lake),
                        curated_frame(spark, [(e, expected_dt(e, SENT)) for e in at7 + at8]))


def test_a_file_outside_the_raw_layout_written_during_a_run_is_not_read(spark, lake,
                                                                         sample_events):
    (key,) = lake.write_message("m1", sample_events[:10], sent_ms=SENT)
    stray = key.rpartition("/")[0] + "/notes.txt"  # beside m1, after the run's listing
    lake.s3.put_object(Bucket=lake.bucket, Key=stray, Body=b"not an event\n")
    store = lake.store
    catalog = JsonFileCatalog(store, LOCAL_CATALOG_KEY)

    first = compact(spark, ListedEarlier(store, {stray}), store, catalog, CompactionSettings())

    # Left where it is, as a stray in the listing is (ignored, never read as lines).
    assert (first.events_added, first.quarantined_lines) == (10, 0)
    second = compact(spark, store, store, catalog, CompactionSettings())
    assert (second.objects_read, second.ignored_objects, second.quarantined_lines) == (0, 1, 0)


def test_output_files_are_sized_from_the_row_count_each_a_key_range_in_key_order(spark, lake):
    events = generated_events("c1", count=3000, start_ms=JAN_13_2015_MS, span_ms=3_600_000)
    for i in reversed(range(0, 3000, 100)):  # 30 objects, as 30 SQS messages would make
        lake.write_message(f"m{i}", events[i:i + 100], sent_ms=SENT)

    # 1000 bytes per row and 0.5 MiB per file: 524 rows a file, so 3000 rows need 6 files.
    report = run(spark, lake, bytes_per_row=1000.0, target_file_bytes=524_288)

    files = parquet_files(lake)
    assert report.files_written == 6
    assert 6 <= sum(len(f) for f in files.values()) <= 6 + len(files)
    # A reader skips files by their txid statistics: each file is a key range, in key order.
    ranges = []
    for key in (k for keys in files.values() for k in keys):
        rows = spark.read.parquet(lake.store.root_uri + key).select("txid", "index").collect()
        keys = [(r["txid"], r["index"]) for r in rows]
        assert keys == sorted(keys), key
        ranges.append((keys[0], keys[-1]))
    ranges.sort()
    assert all(end < start for (_, end), (start, _) in itertools.pairwise(ranges))


def test_a_partition_rewritten_with_a_few_new_rows_keeps_files_of_even_size(spark, lake):
    events = generated_events("c1", count=3300, start_ms=JAN_13_2015_MS, span_ms=3_600_000)
    for i in range(0, 3000, 100):
        lake.write_message(f"m{i}", events[i:i + 100], sent_ms=SENT)
    sizing = {"bytes_per_row": 1000.0, "target_file_bytes": 524_288}  # 524 rows a file
    run(spark, lake, **sizing)
    lake.write_message("late", events[3000:], sent_ms=SENT)  # 300 rows after the 3000 published

    report = run(spark, lake, **sizing)

    # The key ranges are cut over the published rows too (their files' txid spans), not only
    # over the 300 new ones: 3300 rows in 7 files, none holding the whole published partition.
    assert report.files_written == 7
    (files,) = parquet_files(lake).values()  # the one partition, at its new run
    sizes = [spark.read.parquet(lake.store.root_uri + k).count() for k in files]
    assert sum(sizes) == 3300 and max(sizes) <= 2 * 524, sizes


def test_failed_run_leaves_the_published_partition_in_place(spark, lake, sample_events,
                                                            monkeypatch):
    import glue_jobs.compaction_run as run_module

    lake.write_message("m1", sample_events[:16], sent_ms=SENT)
    run(spark, lake)
    before = catalog_bytes(lake)
    expected = curated(spark, lake).collect()

    def write_then_crash(*args, **kwargs):
        real_write(*args, **kwargs)
        raise RuntimeError("driver lost after writing, before the catalog switch")

    real_write = run_module.write_runs
    lake.write_message("m2", sample_events[16:], sent_ms=SENT)
    monkeypatch.setattr(run_module, "write_runs", write_then_crash)
    with pytest.raises(RuntimeError, match="driver lost"):
        run(spark, lake)

    assert catalog_bytes(lake) == before
    assert sorted(curated(spark, lake).collect()) == sorted(expected)
    monkeypatch.setattr(run_module, "write_runs", real_write)
    retry = run(spark, lake)  # the watermark did not advance: m2 is read again
    assert retry.events_added == len(sample_events) - 16
    assert curated(spark, lake).count() == len(sample_events)
