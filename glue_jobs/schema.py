"""The Spark schema of a canonical event, built from the contract (hdfs_events.event), never
inferred from data: schema inference reads the input twice and turns a field that is null in one
batch into a different type in the next, which would split the lake's Parquet schema.

Each Python type of an HdfsEvent field maps to one Spark type; a field type this module does not
know raises at import time, so a contract change cannot silently drop a column.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing

from pyspark.sql import types as T

from hdfs_events.event import FIELDS, REQUIRED, HdfsEvent, XAttr

# The column Spark's PERMISSIVE JSON mode fills with the raw text of a line it cannot parse.
CORRUPT_RECORD = "_corrupt_record"
# Partition columns of the curated table: in the path (cluster=<c>/dt=<d>/), not in the files.
PARTITION_COLUMNS = ("cluster", "dt")
KEY_COLUMNS = ("cluster", "txid", "index")
# Fields the contract gained after lake data already existed, always appended at the end: a raw
# line or a curated Parquet file written before may lack them, and reads them as null.
ADDED_FIELDS = ("gap_end_txid", "children_num")
# Types the live agent adds to the stream (not Hadoop's): kept in the lake, never activity.
AGENT_RECORD_TYPES = ("GAP", "SNAPSHOT")

_SCALARS: dict[type, T.DataType] = {
    str: T.StringType(),
    int: T.LongType(),  # txids and epoch milliseconds exceed 32 bits
    bool: T.BooleanType(),
}


def spark_type(hint: typing.Any) -> T.DataType:
    """The Spark type of one annotated contract field (`X | None` is X, nullable)."""
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        members = [a for a in args if a is not type(None)]
        if len(members) != 1:
            raise TypeError(f"no Spark type for union {hint!r}")
        return spark_type(members[0])
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return T.StringType()  # StrEnum values travel as their names
    if hint in _SCALARS:
        return _SCALARS[hint]
    if typing.get_origin(hint) is tuple and len(args) == 2 and args[1] is Ellipsis:
        return T.ArrayType(spark_type(args[0]), containsNull=False)
    if dataclasses.is_dataclass(hint):
        return _struct_of(hint)
    raise TypeError(f"no Spark type for contract field type {hint!r}")


def _struct_of(record: type) -> T.StructType:
    hints = typing.get_type_hints(record)
    return T.StructType([
        T.StructField(f.name, spark_type(hints[f.name]), nullable=True)
        for f in dataclasses.fields(record)
    ])


def _event_schema() -> T.StructType:
    hints = typing.get_type_hints(HdfsEvent)
    return T.StructType([
        T.StructField(name, spark_type(hints[name]), nullable=name not in REQUIRED)
        for name in FIELDS
    ])


EVENT_SCHEMA: T.StructType = _event_schema()
XATTR_SCHEMA: T.StructType = _struct_of(XAttr)

# What the raw reader parses each JSON line with: the event plus the corrupt-record column.
if FIELDS[len(FIELDS) - len(ADDED_FIELDS):] != ADDED_FIELDS:
    raise TypeError(f"contract fields added later must stay at the end: {ADDED_FIELDS}")

RAW_LINE_SCHEMA: T.StructType = T.StructType(
    [T.StructField(f.name, f.dataType, nullable=True) for f in EVENT_SCHEMA.fields]
    + [T.StructField(CORRUPT_RECORD, T.StringType(), nullable=True)]
)

# Columns stored in a curated Parquet file: the event without its partition columns.
FILE_COLUMNS: tuple[str, ...] = tuple(n for n in FIELDS if n not in PARTITION_COLUMNS)


def curated_schema() -> T.StructType:
    """The curated table as a reader sees it: the event fields, then dt (a DATE-like string)."""
    return T.StructType(
        [T.StructField(f.name, f.dataType, nullable=True) for f in EVENT_SCHEMA.fields]
        + [T.StructField("dt", T.StringType(), nullable=True)]
    )
