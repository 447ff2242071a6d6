"""The curated audit table (curated/audit/): its Spark schemas, built from the contract
(hdfs_events.audit.AuditRecord), never inferred from data.

Rows are the audit records the agent parsed (`reason` null); a line it could not parse is
quarantined by the compaction, so the table has no `raw` or `reason` column. Partitioned like the
events table: `cluster`, then `dt`, the UTC day of the record's `time`, both in the path
(cluster=<c>/dt=<d>/run=<id>/), not in the files. A row's identity is (cluster, host, file_id,
offset): one line of one NameNode audit log file, whatever rotation or re-send did to it.
"""

from __future__ import annotations

import typing

from pyspark.sql import types as T

from glue_jobs.schema import CORRUPT_RECORD, spark_type
from hdfs_events.audit import RECORD_FIELDS, AuditRecord

AUDIT_PARTITION_COLUMNS = ("cluster", "dt")
AUDIT_KEY_COLUMNS = ("cluster", "host", "file_id", "offset")
# Set only on a line the agent could not parse; such a line never reaches the table.
UNPARSED_COLUMNS = ("raw", "reason")


def _record_schema() -> T.StructType:
    hints = typing.get_type_hints(AuditRecord)
    return T.StructType([T.StructField(name, spark_type(hints[name]), nullable=True)
                         for name in RECORD_FIELDS])


# One JSON line of a raw-audit/ object, as AuditRecord.to_json writes it.
AUDIT_RECORD_SCHEMA: T.StructType = _record_schema()
# What the compaction parses each line with: the record plus the corrupt-record column.
AUDIT_RAW_LINE_SCHEMA: T.StructType = T.StructType(
    [*AUDIT_RECORD_SCHEMA.fields, T.StructField(CORRUPT_RECORD, T.StringType(), nullable=True)])

# The table's columns in order (what a reader sees before dt): the record without raw/reason.
AUDIT_COLUMNS: tuple[str, ...] = tuple(n for n in RECORD_FIELDS if n not in UNPARSED_COLUMNS)
# Columns stored in a curated Parquet file: the table's columns without the partition columns.
AUDIT_FILE_COLUMNS: tuple[str, ...] = tuple(
    n for n in AUDIT_COLUMNS if n not in AUDIT_PARTITION_COLUMNS)
AUDIT_FILE_SCHEMA: T.StructType = T.StructType(
    [f for f in AUDIT_RECORD_SCHEMA.fields if f.name in AUDIT_FILE_COLUMNS])


def audit_table_schema() -> T.StructType:
    """The curated audit table as a reader sees it: AUDIT_COLUMNS, then dt (YYYY-MM-DD, UTC)."""
    return T.StructType(
        [f for f in AUDIT_RECORD_SCHEMA.fields if f.name in AUDIT_COLUMNS]
        + [T.StructField("dt", T.StringType(), nullable=True)])
