"""A performance extension of moto 5.2's DynamoDB: a Query of a base table (no IndexName) reads
the items of its one partition instead of every item of the table. Behaviour is unchanged.

Why: moto's `Table.query` builds its candidates from `Table.all_items()`, which sorts EVERY item
of the table, then keeps those whose hash key matches; so each Query costs O(table log table).
Our index's partition key is the parent directory, so the consumer and `verify` make one Query
per directory and a 1M-entry index through moto took hours (~40 entries/s at 100k files).

What changes: while a base-table Query with a hash key runs, `Table.all_items()` of that table,
in that thread, returns only the items stored under that hash key (`Table.items[hash_key]`:
a dict by range key for tables with one, else the item), sorted as `all_items` sorts them.
Everything after the candidate list is moto's own code: the hash-key filter, the range-key sort,
ScanIndexForward, ExclusiveStartKey, Limit and the 1 MB page, range conditions, the
FilterExpression, the projection, ScannedCount and LastEvaluatedKey. Those candidates are
exactly the items `all_items()` would have let through its `item.hash_key == hash_key` filter
(`DynamoType` hashes and compares by (type, value), so the dict lookup finds the same items), in
the same order (`all_items` sorts by (hash, range); within one partition that is by range).
Queries of an index (GSI/LSI), Scan and every other call still read all items.
tests/unit/kit/test_moto_fast_query.py runs the same Queries on moto with and without it.

Scope: `apply()` patches moto's `Table` class for the whole calling process, once (a second
call does nothing). `local_chain.local_aws` calls it before starting its ThreadedMotoServer, which
serves in that process, so the demo, the benches and the integration tests that share that
server get it, and so does in-process moto (`mock_aws`) in the same process, with the same
results. The override is thread-local, so concurrent requests to the threaded server each see
their own partition.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table

_partition = threading.local()
_applied = False


def apply() -> None:
    """Patch moto's Table.query and Table.all_items for this process (idempotent)."""
    global _applied
    if _applied:
        return
    all_items, query = Table.all_items, Table.query

    @functools.wraps(all_items)
    def partition_all_items(self: Table) -> list[Item]:
        override: tuple[Table, list[Item]] | None = getattr(_partition, "override", None)
        if override is not None and override[0] is self:
            return override[1]
        return all_items(self)

    @functools.wraps(query)
    def partition_query(self: Table, hash_key: DynamoType | None, *args: Any,
                        **kwargs: Any) -> tuple[list[Item], int, dict[str, Any] | None]:
        # moto's backend passes index_name as the 8th positional argument (after the projection).
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name or hash_key is None:
            return query(self, hash_key, *args, **kwargs)
        _partition.override = (self, _items_of(self, hash_key))
        try:
            return query(self, hash_key, *args, **kwargs)
        finally:
            _partition.override = None

    Table.all_items = partition_all_items  # type: ignore[method-assign]
    Table.query = partition_query  # type: ignore[method-assign]
    _applied = True


def _items_of(table: Table, hash_key: DynamoType) -> list[Item]:
    # .get, not [..]: Table.items is a defaultdict, and a lookup must not add a partition.
    stored = table.items.get(hash_key)
    if stored is None:
        return []
    if table.range_key_attr:
        return sorted(stored.values(), key=lambda item: item.range_key)  # type: ignore[union-attr]
    return [stored]  # type: ignore[list-item]
