"""Each numbered inventory row's index item as DynamoDB wire JSON, built by the JVM from the
contract's attribute list (hdfs_events/snapshot_wire.py), so the image job's Python only
batches ready strings and sends them: building each item by the contract in Python cost
~20-27 µs a row, most of the write tasks' time (docs/fsimage.md).

A gap repair also needs the items' keys alone (`item_keys`, from the same partition column)
and DeleteRequests of the keys it removes. tests/integration/glue/test_index_item_json.py holds
every item equal to the contract's `to_wire(snapshot_item(...).to_item(now_s=0))`.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark import RDD
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from hdfs_events import names
from hdfs_events.index_item import INDEX_SHARDS
from hdfs_events.snapshot_index import DIRECTORY
from hdfs_events.snapshot_wire import SNAPSHOT_WIRE, Own, WireAttribute, partition_spelling


# substring_index and substr work on the UTF-8 bytes; a regular expression converts every path to
# a Java string first.
def parent_of(path: Column) -> Column:
    """names.split_path's parent ("/" for a top-level entry)."""
    parent = path.substr(F.lit(1), F.length(path) - F.length(name_of(path)) - 1)
    return F.when(parent == "", F.lit("/")).otherwise(parent)


def name_of(path: Column) -> Column:
    """names.split_path's name: the last component."""
    return F.substring_index(path, "/", -1)


def shard_of(name: Column) -> Column:
    """index_item.shard_of: Spark's crc32 is java.util.zip's, which is zlib.crc32."""
    return F.crc32(F.encode(name, "UTF-8")) % INDEX_SHARDS


def in_hot_parent(hot: Iterable[str]) -> Column:
    """The entry goes to its parent's shard partition (a directory written sharded)."""
    hot_list = sorted(hot)
    return parent_of(F.col("path")).isin(hot_list) if hot_list else F.lit(False)


def partition_of(cluster: str, hot: list[str]) -> Column:
    """The partition key of each row's item (index_item.item_key): its parent's partition, or
    its shard of it when the parent is hot."""
    parent, name = parent_of(F.col("path")), name_of(F.col("path"))
    prefix, infix = partition_spelling(cluster)
    own_partition = F.concat(F.lit(prefix), parent)
    shard_partition = F.concat(own_partition, F.lit(infix), shard_of(name).cast("string"))
    return F.when(in_hot_parent(hot), shard_partition).otherwise(own_partition)


def _own_values(cluster: str, txid: int, hot: list[str]) -> dict[Own, Column]:
    path = F.col("path")
    sharded = (F.col("type") == DIRECTORY) & path.isin(hot) if hot else F.lit(False)
    return {
        Own.PARTITION: partition_of(cluster, hot),
        Own.NAME: name_of(path), Own.CLUSTER: F.lit(cluster), Own.TXID: F.lit(txid),
        Own.INDEX: F.col("index"), Own.NOT_DELETED: F.lit(False),
        Own.SHARDS: F.when(sharded, F.lit(INDEX_SHARDS)),
    }


def _wire_value(attribute: WireAttribute, own: dict[Own, Column]) -> Column:
    """{"<type>": value}, or {"NULL": true} for an inventory value the entry does not keep; an
    own value that is null (shards) leaves the attribute out, as to_item does."""
    if isinstance(attribute.source, Own):
        value = own[attribute.source]
    else:
        value = F.col(attribute.source)
        if attribute.default is not None:
            value = F.coalesce(value, F.lit(attribute.default))
        if attribute.kept_for is not None:
            value = F.when(F.col("type") == attribute.kept_for, value)
    if attribute.wire_type == "N":
        value = value.cast("string")  # DynamoDB's numbers travel as strings
    if isinstance(attribute.source, Own):
        return F.when(value.isNotNull(), F.struct(value.alias(attribute.wire_type)))
    return F.struct(value.alias(attribute.wire_type),
                    F.when(value.isNull(), F.lit(True)).alias("NULL"))


def put_request_texts(rows: DataFrame, cluster: str, txid: int, hot: Iterable[str]) -> RDD[str]:
    """A BatchWriteItem PutRequest of each numbered row's item (rows with the inventory's
    columns and `index`), as JSON text: nulls left out, so a value is {"S": ...} or
    {"NULL": true}, never both.

    DataFrame.toJSON, not a to_json column through DataFrame.rdd: the JVM hands Python each
    text as a UTF-8 string, where .rdd pickles every row and Python rebuilds it as a Row
    (`_create_row`, the write tasks' largest Python cost at 1M inodes, py-spy). toJSON leaves
    nulls out by the session's spark.sql.jsonGenerator.ignoreNullFields, true unless set."""
    own = _own_values(cluster, txid, sorted(hot))
    item = F.struct(*(_wire_value(a, own).alias(a.name) for a in SNAPSHOT_WIRE))
    return rows.select(F.struct(item.alias("Item")).alias("PutRequest")).toJSON()


def item_keys(rows: DataFrame, cluster: str, hot: Iterable[str]) -> DataFrame:
    """The key (names.INDEX_PK, names.INDEX_SK) of each row's item, as put_request_texts puts
    it."""
    return rows.select(partition_of(cluster, sorted(hot)).alias(names.INDEX_PK),
                       name_of(F.col("path")).alias(names.INDEX_SK))


def delete_request_texts(keys: DataFrame) -> RDD[str]:
    """A BatchWriteItem DeleteRequest of each key (columns names.INDEX_PK, names.INDEX_SK), as
    JSON text."""
    key = F.struct(*(F.struct(F.col(k).alias("S")).alias(k)
                     for k in (names.INDEX_PK, names.INDEX_SK)))
    return keys.select(F.struct(key.alias("Key")).alias("DeleteRequest")).toJSON()
