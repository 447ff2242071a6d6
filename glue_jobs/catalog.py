"""Where each partition of the curated events table currently lives.

Readers (Athena, the rollup job) read a partition only at the location the catalog names. The
compaction job writes every partition it changes to a fresh run prefix and then switches the
catalog entry, so a reader sees the whole old partition or the whole new one, never half.

- GlueCatalog: the Glue Data Catalog through boto3 (on Glue). Each partition switch is one
  atomic catalog update; a run's switches go in batches of 100 (the BatchCreatePartition and
  BatchUpdatePartition limit), so two partitions may flip a moment apart, never half of one.
- JsonFileCatalog: a JSON document in the lake (local runs and tests), replaced in one atomic
  write (os.replace locally), so all of a run's partitions flip together.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from glue_jobs.layout import LOCAL_CATALOG_KEY
from glue_jobs.storage import LakeStore

PartitionKey = tuple[str, str]  # (cluster, dt)

# Glue BatchCreatePartition and BatchUpdatePartition take at most 100 partitions per call.
GLUE_BATCH = 100


class CatalogError(RuntimeError):
    """The catalog refused a partition switch; the message names the partitions."""


class PartitionCatalog(Protocol):
    def locations(self) -> dict[PartitionKey, str]: ...
    def publish(self, changes: Mapping[PartitionKey, str]) -> None: ...


class JsonFileCatalog:
    """{"table": ..., "partitions": {"<cluster>/<dt>": {"cluster", "dt", "location", ...}}}"""

    def __init__(self, store: LakeStore, key: str, table: str = "events") -> None:
        self.store, self.key, self.table = store, key, table

    def _document(self) -> dict[str, Any]:
        raw = self.store.read_bytes(self.key)
        if raw is None:
            return {"table": self.table, "partitions": {}}
        doc = json.loads(raw)
        if doc.get("table") != self.table:
            raise CatalogError(f"{self.key}: catalog of table {doc.get('table')!r}, "
                               f"expected {self.table!r}")
        return doc

    def locations(self) -> dict[PartitionKey, str]:
        return {(p["cluster"], p["dt"]): p["location"]
                for p in self._document()["partitions"].values()}

    def publish(self, changes: Mapping[PartitionKey, str]) -> None:
        if not changes:
            return
        doc = self._document()
        now = datetime.now(UTC).isoformat(timespec="seconds")
        for (cluster, dt), location in changes.items():
            doc["partitions"][f"{cluster}/{dt}"] = {
                "cluster": cluster, "dt": dt, "location": location, "published_at": now}
        doc["partitions"] = dict(sorted(doc["partitions"].items()))
        self.store.write_bytes(self.key, json.dumps(doc, indent=1).encode())


class GlueCatalog:
    """Partitions (cluster, dt) of a Glue table whose partition keys are exactly those two."""

    def __init__(self, client: Any, database: str, table: str) -> None:
        self.client, self.database, self.table = client, database, table

    def locations(self) -> dict[PartitionKey, str]:
        out: dict[PartitionKey, str] = {}
        pages = self.client.get_paginator("get_partitions").paginate(
            DatabaseName=self.database, TableName=self.table)
        for page in pages:
            for p in page["Partitions"]:
                cluster, dt = p["Values"]
                out[(cluster, dt)] = p["StorageDescriptor"]["Location"]
        return out

    def publish(self, changes: Mapping[PartitionKey, str]) -> None:
        if not changes:
            return
        table_sd = self.client.get_table(DatabaseName=self.database,
                                         Name=self.table)["Table"]["StorageDescriptor"]
        existing = self.locations()

        def partition_input(key: PartitionKey) -> dict[str, Any]:
            sd = copy.deepcopy(table_sd)
            sd["Location"] = changes[key]
            return {"Values": list(key), "StorageDescriptor": sd}

        updates = [k for k in changes if k in existing]
        creates = [k for k in changes if k not in existing]
        errors: list[str] = []
        for i in range(0, len(updates), GLUE_BATCH):
            resp = self.client.batch_update_partition(
                DatabaseName=self.database, TableName=self.table,
                Entries=[{"PartitionValueList": list(k), "PartitionInput": partition_input(k)}
                         for k in updates[i:i + GLUE_BATCH]])
            errors += [f"{e['PartitionValueList']}: {e['ErrorDetail']}"
                       for e in resp.get("Errors", ())]
        for i in range(0, len(creates), GLUE_BATCH):
            resp = self.client.batch_create_partition(
                DatabaseName=self.database, TableName=self.table,
                PartitionInputList=[partition_input(k) for k in creates[i:i + GLUE_BATCH]])
            errors += [f"{e['PartitionValues']}: {e['ErrorDetail']}"
                       for e in resp.get("Errors", ())]
        if errors:
            raise CatalogError(f"{self.database}.{self.table}: partition switch failed for "
                               + "; ".join(errors))


def catalog_for(database: str, table: str, lake: LakeStore) -> PartitionCatalog:
    """The Glue table `database`.`table` when a database is named, else the lake's JSON catalog."""
    if database:
        import boto3  # on Glue; local runs use the JSON catalog and need no AWS library

        return GlueCatalog(boto3.client("glue"), database, table)
    return JsonFileCatalog(lake, LOCAL_CATALOG_KEY)
