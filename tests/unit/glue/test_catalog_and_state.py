"""The partition catalogs (JSON file, Glue through moto), the stores and the watermark."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from glue_jobs import watermark
from glue_jobs.catalog import GlueCatalog, JsonFileCatalog
from glue_jobs.curated_io import remove_superseded_runs
from glue_jobs.layout import LOCAL_CATALOG_KEY
from glue_jobs.storage import LocalStore, S3Store, store_for
from hdfs_events.lake_layout import EVENTS_PREFIX, new_run_id, run_prefix

RAW = "raw/cluster=c1/dt=2015-01-13/hour=07/"


def test_json_catalog_switches_partitions_in_one_replace(tmp_path: Path):
    store = LocalStore(tmp_path)
    catalog = JsonFileCatalog(store, LOCAL_CATALOG_KEY)
    assert catalog.locations() == {}
    catalog.publish({("c1", "2015-01-13"): "file:///x/run=1/", ("c1", "2015-01-14"): "file:///y/"})
    catalog.publish({("c1", "2015-01-13"): "file:///x/run=2/"})
    assert catalog.locations() == {("c1", "2015-01-13"): "file:///x/run=2/",
                                   ("c1", "2015-01-14"): "file:///y/"}
    # No temporary files are left beside the catalog.
    assert os.listdir(tmp_path / "curated" / "_catalog") == ["events.json"]


@mock_aws
def test_glue_catalog_creates_then_updates_partition_locations():
    glue = boto3.client("glue")
    glue.create_database(DatabaseInput={"Name": "lake"})
    glue.create_table(DatabaseName="lake", TableInput={
        "Name": "events",
        "PartitionKeys": [{"Name": "cluster", "Type": "string"}, {"Name": "dt", "Type": "string"}],
        "StorageDescriptor": {"Columns": [{"Name": "txid", "Type": "bigint"}],
                              "Location": "s3://lake/curated/events/"}})
    catalog = GlueCatalog(glue, "lake", "events")
    catalog.publish({("c1", "2015-01-13"): "s3://lake/curated/events/cluster=c1/dt=2015-01-13/run=a/"})
    catalog.publish({("c1", "2015-01-13"): "s3://lake/curated/events/cluster=c1/dt=2015-01-13/run=b/",
                     ("c1", "2015-01-14"): "s3://lake/curated/events/cluster=c1/dt=2015-01-14/run=b/"})
    assert catalog.locations() == {
        ("c1", "2015-01-13"): "s3://lake/curated/events/cluster=c1/dt=2015-01-13/run=b/",
        ("c1", "2015-01-14"): "s3://lake/curated/events/cluster=c1/dt=2015-01-14/run=b/"}


@mock_aws
def test_s3_store_lists_reads_writes_and_deletes_under_its_prefix():
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="lake", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    store = store_for("s3://lake/prod/", s3_client=s3)
    # Spark opens a local run's s3:// lake through S3A (Glue opens s3:// itself).
    assert isinstance(store, S3Store) and store.root_uri == "s3a://lake/prod/"
    store.write_bytes(RAW + "a.jsonl.gz", b"x")
    store.write_bytes(RAW + "b.jsonl.gz", b"yy")
    assert [(o.key, o.size) for o in store.list_objects("raw/")] == [
        (RAW + "a.jsonl.gz", 1), (RAW + "b.jsonl.gz", 2)]
    assert store.read_bytes(RAW + "b.jsonl.gz") == b"yy"
    assert store.read_bytes("missing") is None
    assert store.delete_prefix("raw/") == 2
    assert list(store.list_objects("raw/")) == []


def test_unsupported_uri_is_refused_by_name():
    with pytest.raises(ValueError, match="hdfs://nn/lake"):
        store_for("hdfs://nn/lake")


def test_watermark_returns_only_new_or_changed_objects(tmp_path: Path):
    store = LocalStore(tmp_path)
    for name in ("a", "b"):
        store.write_bytes(f"{RAW}{name}.jsonl.gz", b"data")
    store.write_bytes("raw/cluster=c1/README", b"not ours")
    todo, strays = watermark.pending(store.list_objects("raw/"), watermark.load(store))
    assert sorted(o.key.name for o in todo) == ["a.jsonl.gz", "b.jsonl.gz"]
    assert [s.key for s in strays] == ["raw/cluster=c1/README"]

    watermark.advance(store, {}, {o.info.key: (o, watermark.OUTCOME_COMPACTED) for o in todo})
    known = watermark.load(store)
    assert watermark.pending(store.list_objects(RAW), known)[0] == []
    # An overwritten object (SQS redelivery) is read again.
    store.write_bytes(f"{RAW}b.jsonl.gz", b"data, again")
    todo, _ = watermark.pending(store.list_objects(RAW), known)
    assert [o.key.name for o in todo] == ["b.jsonl.gz"]
    doc = json.loads((tmp_path / "curated/_state/compact_events/raw/cluster=c1/dt=2015-01-13.json")
                     .read_text())
    assert doc["hour=07/a.jsonl.gz"][2] == "compacted"


def test_superseded_runs_are_removed_after_their_grace_period(tmp_path: Path):
    store = LocalStore(tmp_path)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    old, failed, current = (new_run_id(t0), new_run_id(t0 + timedelta(minutes=5)),
                            new_run_id(t0 + timedelta(hours=2)))
    for run in (old, failed, current):
        store.write_bytes(run_prefix(EVENTS_PREFIX, "c1", "2015-01-13", run) + "part-0.parquet",
                          b"p")
    locations = {("c1", "2015-01-13"):
                 store.root_uri + run_prefix(EVENTS_PREFIX, "c1", "2015-01-13", current)}

    assert remove_superseded_runs(store, locations, locations, t0 + timedelta(hours=3),
                                  timedelta(hours=24)) == 0
    assert remove_superseded_runs(store, locations, locations, t0 + timedelta(hours=25),
                                  timedelta(hours=24)) == 2
    left = {o.key.split("/")[4] for o in store.list_objects("curated/events/")}
    assert left == {f"run={current}"}
