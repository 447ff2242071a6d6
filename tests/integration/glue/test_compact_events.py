"""compact_events on a local SparkSession over raw objects laid out as the consumer writes
them: exactly-once output, idempotent re-runs, late data, quarantine, atomic publication."""

from __future__ import annotations

import dataclasses
import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.compact_events import CompactionReport, Settings, compact
from glue_jobs.curated_io import read_curated
from glue_jobs.layout import LOCAL_CATALOG_KEY
from glue_jobs.storage import store_for
from hdfs_events.event import EventType, HdfsEvent
from tests.integration.glue.frames import assert_frames_equal, curated_frame
from tests.integration.glue.lake import JAN_13_2015_MS, RawLake

pytestmark = pytest.mark.slow
SENT = JAN_13_2015_MS + 8 * 3_600_000  # 08:00 on the sample's day


def run(spark, lake: RawLake, **overrides) -> CompactionReport:
    store = store_for(lake.uri)
    settings = dataclasses.replace(Settings(), **overrides)
    return compact(spark, store, store, JsonFileCatalog(store, LOCAL_CATALOG_KEY), settings)


def curated(spark, lake: RawLake):
    store = store_for(lake.uri)
    return read_curated(spark, JsonFileCatalog(store, LOCAL_CATALOG_KEY).locations())


def day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def expected_dt(e: HdfsEvent, sent_ms: int) -> str:
    return day(e.timestamp if e.timestamp is not None else sent_ms)


def test_sample_edit_log_compacts_to_exactly_its_events(spark, lake, sample_events):
    lake.write_message("m1", sample_events[:20], sent_ms=SENT)
    lake.write_message("m2", sample_events[20:], sent_ms=SENT)

    report = run(spark, lake)

    assert report.events_added == len(sample_events) == 32
    assert report.quarantined_lines == report.quarantined_objects == 0
    assert_frames_equal(curated(spark, lake),
                        curated_frame(spark, [(e, expected_dt(e, SENT)) for e in sample_events]))
