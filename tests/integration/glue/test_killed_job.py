"""compact_events killed with SIGKILL while it writes through S3A, then run again: a reader of
the catalog never sees the half-written run, and the re-run publishes every event exactly once.

The job runs as a user (or Glue) runs it: `python -m glue_jobs.compact_events` on `s3://` URIs
in a process group of its own, so the kill takes the driver and its JVM together, as a lost
Glue driver would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.compaction_run import CompactionSettings, compact
from glue_jobs.curated_io import read_curated
from glue_jobs.layout import LOCAL_CATALOG_KEY
from hdfs_events.lake_layout import EVENTS_PREFIX
from tests.integration.glue.frames import assert_frames_equal, curated_frame
from tests.integration.glue.generated_events import DAY_MS, generated_events
from tests.integration.glue.lake import JAN_13_2015_MS, RawLake, partition_of

pytestmark = pytest.mark.slow
SENT = JAN_13_2015_MS + 8 * 3_600_000


def _expected(spark, events):
    return curated_frame(spark, [(e, partition_of(e.timestamp if e.timestamp is not None
                                                  else SENT)[0]) for e in events])


def _published_keys(lake: RawLake, catalog: JsonFileCatalog) -> set[str]:
    return {lake.store.root_uri + k for loc in catalog.locations().values()
            for k in lake.keys(loc.removeprefix(lake.store.root_uri))}


def test_a_job_killed_mid_write_publishes_nothing_and_its_rerun_publishes_once(
        spark, lake: RawLake):
    # APPEND and METADATA events carry no timestamp: keep to events that land by their own.
    events = [e for e in generated_events("c1", count=8000, start_ms=JAN_13_2015_MS,
                                          span_ms=3 * DAY_MS) if e.timestamp is not None]
    first, rest = events[:1000], events[1000:]
    lake.write_message("m1", first, sent_ms=SENT)
    catalog = JsonFileCatalog(lake.store, LOCAL_CATALOG_KEY)
    compact(spark, lake.store, lake.store, catalog, CompactionSettings())
    before, visible = lake.read(LOCAL_CATALOG_KEY), _published_keys(lake, catalog)
    for i in range(0, len(rest), 500):  # messages over every hour of three days
        lake.write_message(f"m{i + 2}", rest[i:i + 500], sent_ms=SENT)

    # Small files: the write takes many S3A calls, a wide window to be killed in.
    job = subprocess.Popen(
        [sys.executable, "-m", "glue_jobs.compact_events", "--source", lake.uri,
         "--target", lake.uri, "--target_file_mb", "0.02"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "SPARK_SHUFFLE_PARTITIONS": "2"})
    try:
        deadline = time.monotonic() + 600
        while not any("/run=" in k or "_temporary" in k for k in lake.keys(EVENTS_PREFIX)
                      if lake.store.root_uri + k not in visible):
            assert job.poll() is None, "the job ended before it began to write"
            assert time.monotonic() < deadline, "the job never began to write"
            time.sleep(0.02)
        os.killpg(job.pid, signal.SIGKILL)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
        job.wait()

    # The kill left objects of the run in the bucket, and the catalog as it was.
    written = {lake.store.root_uri + k for k in lake.keys(EVENTS_PREFIX)} - visible
    assert written, "the kill came before anything was written"
    assert lake.read(LOCAL_CATALOG_KEY) == before
    assert_frames_equal(read_curated(spark, catalog.locations()), _expected(spark, first))

    report = compact(spark, lake.store, lake.store, catalog, CompactionSettings())

    assert report.events_added == len(rest)
    assert_frames_equal(read_curated(spark, catalog.locations()), _expected(spark, events))
    assert not set(_published_keys(lake, catalog)) & written, \
        "the catalog names an object of the killed run"
    assert json.loads(lake.read(LOCAL_CATALOG_KEY))["partitions"]
