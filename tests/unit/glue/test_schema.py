"""The Spark schema is derived from the contract field by field, never inferred."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from glue_jobs.schema import (
    ADDED_FIELDS,
    CORRUPT_RECORD,
    EVENT_SCHEMA,
    FILE_COLUMNS,
    RAW_LINE_SCHEMA,
    spark_type,
)
from hdfs_events.event import FIELDS, REQUIRED


def test_every_contract_field_is_a_column_in_contract_order():
    assert tuple(EVENT_SCHEMA.fieldNames()) == FIELDS
    assert RAW_LINE_SCHEMA.fieldNames() == [*FIELDS, CORRUPT_RECORD]


def test_field_types_follow_the_python_annotations():
    types = {f.name: f.dataType for f in EVENT_SCHEMA.fields}
    assert types["txid"] == types["timestamp"] == types["size"] == T.LongType()
    assert types["type"] == types["inode_type"] == T.StringType()
    assert types["overwrite"] == T.BooleanType()
    assert types["acls"] == T.ArrayType(T.StringType(), containsNull=False)
    assert types["xattrs"].elementType.fieldNames() == ["namespace", "name", "value"]


def test_required_fields_are_not_nullable():
    assert {f.name for f in EVENT_SCHEMA.fields if not f.nullable} == set(REQUIRED)


def test_partition_columns_stay_out_of_the_files():
    assert "cluster" not in FILE_COLUMNS and "dt" not in FILE_COLUMNS
    assert "txid" in FILE_COLUMNS


def test_an_unknown_field_type_is_refused():
    with pytest.raises(TypeError, match="complex"):
        spark_type(complex)
    with pytest.raises(TypeError, match="union"):
        spark_type(int | str | None)


def test_fields_the_contract_added_later_are_the_last_columns():
    # Parquet files and raw lines written before them lack these columns and read them as null;
    # a reader matching columns by position (not name) still lines the old ones up.
    assert FIELDS[-len(ADDED_FIELDS):] == ADDED_FIELDS == ("gap_end_txid", "children_num")
    assert FILE_COLUMNS[-2:] == ADDED_FIELDS
    types = {f.name: f.dataType for f in EVENT_SCHEMA.fields}
    assert types["gap_end_txid"] == types["children_num"] == T.LongType()
