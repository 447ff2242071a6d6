"""The lake bucket read as a user of the lake reads it: a table at the locations its catalog
names (never a superseded run), and the consumer's quarantine. The e2e chain checks these
against its source; the demo's report is built on them."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.curated_io import location_key
from glue_jobs.layout import LOCAL_CATALOG_KEY
from glue_jobs.storage import LakeStore
from hdfs_events.quarantine import INGEST_PREFIX


def parquet_tables(lake: LakeStore, prefix: str) -> list[tuple[str, pa.Table]]:
    """(key, table) of each Parquet object under prefix."""
    return [(o.key, pq.read_table(pa.BufferReader(lake.read_bytes(o.key))))
            for o in lake.list_objects(prefix) if o.key.endswith(".parquet")]


def catalogued(lake: LakeStore, catalog: JsonFileCatalog) -> pa.Table:
    """The rows of every partition `catalog` lists, at its location, with `cluster` and `dt`
    taken from the partition (the objects do not hold them)."""
    tables = []
    for (cluster, dt), location in catalog.locations().items():
        prefix = location_key(lake, location)
        if prefix is None:
            raise ValueError(f"catalog location {location} is outside the lake {lake.root_uri}")
        for _, table in parquet_tables(lake, prefix):
            n = table.num_rows
            table = table.append_column("cluster", pa.array([cluster] * n))
            tables.append(table.append_column("dt", pa.array([dt] * n)))
    return pa.concat_tables(tables, promote_options="default") if tables else pa.table({})


def curated_table(lake: LakeStore) -> pa.Table:
    """The curated events at the locations the catalog names (never superseded runs)."""
    return catalogued(lake, JsonFileCatalog(lake, LOCAL_CATALOG_KEY))


def quarantined_messages(lake: LakeStore) -> list[dict[str, Any]]:
    """What the consumer quarantined: one JSON document per message, with its reason."""
    return [json.loads(lake.read_bytes(o.key))
            for o in lake.list_objects(INGEST_PREFIX) if o.key.endswith(".json")]
