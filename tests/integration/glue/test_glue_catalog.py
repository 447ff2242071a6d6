"""Compaction publishing through the Glue Data Catalog API (moto server over HTTP, reached via
AWS_ENDPOINT_URL exactly as a Glue job reaches AWS), the path the job takes on Glue, with the
data read and written through S3A in the same server's S3."""

from __future__ import annotations

import boto3
import pytest

from glue_jobs.catalog import catalog_for
from glue_jobs.compaction_run import CompactionSettings, compact
from glue_jobs.curated_io import read_curated
from tests.integration.glue.lake import JAN_13_2015_MS, RawLake

pytestmark = pytest.mark.slow
SENT = JAN_13_2015_MS + 8 * 3_600_000


def test_partitions_are_created_then_switched_in_the_glue_catalog(spark, lake: RawLake,
                                                                  sample_events):
    glue = boto3.client("glue")
    glue.create_database(DatabaseInput={"Name": "hdfs_lake"})
    glue.create_table(DatabaseName="hdfs_lake", TableInput={
        "Name": "events",
        "PartitionKeys": [{"Name": "cluster", "Type": "string"},
                          {"Name": "dt", "Type": "string"}],
        "StorageDescriptor": {"Columns": [{"Name": "txid", "Type": "bigint"}],
                              "Location": lake.uri + "/curated/events/"}})
    store = lake.store
    catalog = catalog_for("hdfs_lake", "events", store)

    lake.write_message("m1", sample_events[:16], sent_ms=SENT)
    compact(spark, store, store, catalog, CompactionSettings())
    (first,) = catalog.locations().values()
    lake.write_message("m2", sample_events[16:], sent_ms=SENT)
    compact(spark, store, store, catalog, CompactionSettings())

    partitions = glue.get_partitions(DatabaseName="hdfs_lake", TableName="events")["Partitions"]
    assert [p["Values"] for p in partitions] == [["c1", "2015-01-13"]]
    location = partitions[0]["StorageDescriptor"]["Location"]
    assert location != first and "/run=" in location
    assert read_curated(spark, catalog.locations()).count() == len(sample_events)
