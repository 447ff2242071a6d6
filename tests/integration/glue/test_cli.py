"""The local entry point as a user runs it: `python -m glue_jobs.compact_events` with the
arguments a Glue job run passes (`s3://` lake URIs), its own SparkSession reaching the moto
server's S3 through S3A from the AWS environment alone, and a JSON report on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from glue_jobs.layout import LOCAL_CATALOG_KEY
from tests.integration.glue.lake import JAN_13_2015_MS, RawLake

pytestmark = pytest.mark.slow


def test_compact_events_module_runs_on_s3_uris_and_reports(lake: RawLake, sample_events):
    lake.write_message("m1", sample_events, sent_ms=JAN_13_2015_MS + 8 * 3_600_000)
    lake.write_bytes("c1", "2015-01-13", "09", "broken", b"\x1f\x8b not really gzip")

    out = subprocess.run(
        [sys.executable, "-m", "glue_jobs.compact_events",
         "--source", lake.uri, "--target", lake.uri],
        capture_output=True, text=True, timeout=600, check=True,
        env={**os.environ, "SPARK_SHUFFLE_PARTITIONS": "2"})
    report = json.loads(out.stdout.strip().splitlines()[-1])

    assert report["events_added"] == len(sample_events)
    assert report["quarantined_objects"] == 1
    (location,) = json.loads(lake.read(LOCAL_CATALOG_KEY))["partitions"].values()
    assert location["location"].startswith(f"s3a://{lake.bucket}/curated/events/")
