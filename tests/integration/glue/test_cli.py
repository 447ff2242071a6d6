"""The local entry point as a user runs it: `python -m glue_jobs.compact_events` with file://
URIs, its own SparkSession, and a JSON report on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.integration.glue.lake import JAN_13_2015_MS, RawLake

pytestmark = pytest.mark.slow


def test_compact_events_module_runs_locally_and_reports(lake: RawLake, sample_events):
    lake.write_message("m1", sample_events, sent_ms=JAN_13_2015_MS + 8 * 3_600_000)
    lake.write_bytes("c1", "2015-01-13", "09", "broken", b"\x1f\x8b not really gzip")

    def job(module: str) -> dict:
        out = subprocess.run(
            [sys.executable, "-m", module, "--source", lake.uri, "--target", lake.uri],
            capture_output=True, text=True, timeout=600, check=True,
            env={**os.environ, "SPARK_SHUFFLE_PARTITIONS": "2"})
        return json.loads(out.stdout.strip().splitlines()[-1])

    report = job("glue_jobs.compact_events")
    assert report["events_added"] == len(sample_events)
    assert report["quarantined_objects"] == 1
    assert (lake.root / "curated" / "_catalog" / "events.json").is_file()
