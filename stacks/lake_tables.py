"""The lake's Glue Data Catalog: its database and the tables over curated/ (layouts in
stacks/lake_catalog.py)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_glue as glue
from aws_cdk import aws_s3 as s3

from hdfs_events import lake_layout as layout
from stacks import lake_catalog as catalog


class LakeTables:
    """Not a Construct: the database and tables keep the stack as their scope, so their
    CloudFormation logical IDs stay those already deployed. A new ID would make CloudFormation
    create a table and delete the old one, and the registered partitions with it."""

    def __init__(self, stack: Stack, *, database_name: str, lake: s3.IBucket,
                 removal: RemovalPolicy) -> None:
        lake_uri = f"s3://{lake.bucket_name}"
        self.database = glue.Database(stack, "Database", database_name=database_name,
                                      description="hdfs-events lake", removal_policy=removal)
        # The tables live in the lake bucket and take its encryption.
        in_lake = glue.S3TableStorage.from_bucket(lake)
        # events: partitions registered by the compaction job, not projected. It writes each
        # partition to a fresh run=<id>/ folder and then switches the partition's catalog
        # location (glue_jobs/catalog.py); projection would make Athena ignore those locations
        # and read every run's files under dt=<d>/, superseded ones included.
        self.events_table = glue.S3Table(
            stack, "EventsTable", table_name=layout.EVENTS_TABLE, database=self.database,
            description="Compacted HDFS events, one row per (cluster, txid, index)",
            storage=in_lake, s3_prefix=layout.EVENTS_PREFIX, data_format=glue.DataFormat.PARQUET,
            columns=catalog.event_columns(), partition_keys=catalog.event_partition_keys())
        def projected_daily(table_id: str, name: str, description: str, prefix: str,
                            columns: list[glue.Column]) -> glue.S3Table:
            """A rollup table partitioned by dt, its partitions projected (never registered)."""
            return glue.S3Table(
                stack, table_id, table_name=name, database=self.database,
                description=description, storage=in_lake, s3_prefix=prefix,
                data_format=glue.DataFormat.PARQUET, columns=columns,
                partition_keys=catalog.dt_partition(),
                partition_projection=catalog.dt_projection(),
                parameters=catalog.dt_location_template(f"{lake_uri}/{prefix}"))

        # The rollups' tables: the jobs never register their partitions.
        projected_daily(
            "ActivityTable", layout.ACTIVITY_TABLE,
            "Daily activity per directory prefix and owner", layout.ACTIVITY_PREFIX,
            catalog.activity_columns())
        projected_daily(
            "MassDeletesTable", layout.MASS_DELETES_TABLE, "UNLINK bursts over the threshold",
            layout.MASS_DELETES_PREFIX, catalog.mass_delete_columns())
        projected_daily(
            "GapsTable", layout.GAPS_TABLE,
            "Edits purged before the agent read them, per cluster and day",
            layout.GAPS_PREFIX, catalog.gap_columns())
        # audit: registered partitions at run=<id>/ folders, as events (glue_jobs/compact_audit.py).
        self.audit_table = glue.S3Table(
            stack, "AuditTable", table_name=layout.AUDIT_TABLE, database=self.database,
            description="NameNode audit records, one row per (cluster, host, file_id, offset)",
            storage=in_lake, s3_prefix=layout.AUDIT_PREFIX, data_format=glue.DataFormat.PARQUET,
            columns=catalog.audit_columns(), partition_keys=catalog.event_partition_keys())
        # attribution: who made each event; registered partitions at run=<id>/ folders, as
        # events (glue_jobs/attribute_events.py).
        self.attribution_table = glue.S3Table(
            stack, "AttributionTable", table_name=layout.ATTRIBUTION_TABLE,
            database=self.database,
            description="Who made each event, from the NameNode audit log: one row per "
            "attributed (cluster, txid, index)",
            storage=in_lake, s3_prefix=layout.ATTRIBUTION_PREFIX,
            data_format=glue.DataFormat.PARQUET, columns=catalog.attribution_columns(),
            partition_keys=catalog.event_partition_keys())
        # The namespace at an fsimage's txid: registered partitions at run=<id>/ folders, as
        # events (glue_jobs/inventory_run.py).
        self.inventory_table = glue.S3Table(
            stack, "InventoryTable", table_name=layout.INVENTORY_TABLE, database=self.database,
            description="The namespace at a checkpoint (fsimage): one row per path",
            storage=in_lake, s3_prefix=layout.INVENTORY_PREFIX,
            data_format=glue.DataFormat.PARQUET, columns=catalog.inventory_columns(),
            partition_keys=catalog.inventory_partition_keys())

    def partitions_registered_by_jobs(self) -> list[glue.S3Table]:
        """The tables whose partitions the jobs register (the others are projected)."""
        return [self.events_table, self.audit_table, self.attribution_table,
                self.inventory_table]
