"""A performance extension of moto 5.2's DynamoDB: a page of a base-table Scan (no IndexName)
costs what the page holds, not what the table holds. Behaviour is unchanged.

Why: moto's `Table.scan` starts every page from `Table.all_items()`, which sorts EVERY item of
the table, then walks that list from its top: each item is hashed for its segment
(`Item.is_within_segment`, an MD5 of the hash key) and compared with the ExclusiveStartKey until
the page's first item is found. A page costs O(table log table) and a whole Scan
O(table^2 / page). The inventory job's gap repair reads the index with a paged parallel Scan
(glue_jobs/indexed_entries.py): ~172 s on moto at 100k items, out of reach at 1M.

What changes: while a base-table Scan runs, `Table.all_items()` of that table, in that thread,
returns moto's own order of the table minus what moto's loop would pass over before the page's
first item: the items of other segments, and the items up to the ExclusiveStartKey.
- The order is moto's `all_items()` itself, kept per table until moto next stores or removes
  one of its items: `Table.put_item` and `Table.delete_item` are the only moto code that adds,
  replaces or removes an item (PutItem, BatchWriteItem, TransactWriteItems, PartiQL, and
  UpdateItem of a new item all call them; UpdateItem of a stored item changes its non-key
  attributes in place, on the very object the kept order holds; a restored table, or one rolled
  back by a failed transaction, is a new Table).
- A segment's share of that order is kept beside it, picked by moto's own
  `Item.is_within_segment`, called once a run of items with one hash key value (moto hashes
  nothing else).
- The page's first item is found by bisection with moto's own test
  (`Table._item_comes_before_dct`, what moto's loop asks of each item): O(log table).
- The list is handed over lazily, so moto's loop takes items only up to its page's end.
Everything after that is moto's own loop on the same items in the same order: it still checks
each item's segment and the start key, cuts the page by Limit and by 1 MB, applies ScanFilter,
FilterExpression and the projection, and counts ScannedCount and sets LastEvaluatedKey. The
items left out are exactly those moto's loop skips with `continue` before it touches the page's
results or counts: a segment is a subsequence of the order, and "comes before the start key"
holds on a prefix of it, because the order is sorted by the very keys that test compares (so
the bisection finds where moto's walk would stop skipping; an ill-typed start key raises the
same error, as moto's test is the one called). Scans of an index (GSI/LSI), Query, and every
other call are moto's own. tests/unit/kit/test_moto_fast_scan.py runs the same Scans on moto
with and without it, and counts what a page touches.

Cost: the first page after a write pays one `all_items()` (what moto pays for every page) and,
for each segment asked, one pass over the order; a later page pays O(log table + page). A write
between pages is seen, at that price.

Scope: `apply()` patches moto's `Table` class for the whole calling process, once (a second
call does nothing), as tests/kit/moto_fast_query.py does and wherever it is applied
(`local_chain.local_aws`, before its ThreadedMotoServer starts; in-process benches). The
override is thread-local, so concurrent requests to the threaded server each see their own.
"""

from __future__ import annotations

import bisect
import functools
import inspect
import itertools
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from moto.dynamodb.models.dynamo_type import Item
from moto.dynamodb.models.table import Table

Segments = tuple[None, None] | tuple[int, int]
WHOLE_TABLE: Segments = (None, None)

_scanning = threading.local()
# The tick of each table's last write, and its kept order: by identity, gone with the table.
_written: weakref.WeakKeyDictionary[Table, int] = weakref.WeakKeyDictionary()
_orders: weakref.WeakKeyDictionary[Table, _Order] = weakref.WeakKeyDictionary()
_ticks = itertools.count()
_keeping = threading.Lock()
_applied = False


@dataclass(frozen=True, slots=True)
class _Order:
    """moto's `all_items()` of a table as it was after the write ticked `written`, and the
    shares of it that segments asked for."""

    written: int | None
    items: list[Item]
    shares: dict[Segments, list[Item]] = field(default_factory=dict)

    def of(self, segments: Segments) -> list[Item]:
        if segments == WHOLE_TABLE:
            return self.items
        share = self.shares.get(segments)
        if share is None:
            share = self.shares[segments] = _share(self.items, segments)
        return share


def apply() -> None:
    """Patch moto's Table.scan, Table.all_items and its two item writes for this process
    (idempotent)."""
    global _applied
    if _applied:
        return
    all_items, scan = Table.all_items, Table.scan
    parameters = inspect.signature(scan)

    @functools.wraps(all_items)
    def scanned_all_items(self: Table) -> Iterable[Item]:
        override: tuple[Table, Iterator[Item]] | None = getattr(_scanning, "override", None)
        if override is not None and override[0] is self:
            return override[1]
        return all_items(self)

    @functools.wraps(scan)
    def ordered_scan(self: Table, *args: Any,
                     **kwargs: Any) -> tuple[list[Item], int, dict[str, Any] | None]:
        call = parameters.bind(self, *args, **kwargs)
        call.apply_defaults()
        if call.arguments["index_name"]:
            return scan(self, *args, **kwargs)
        _scanning.override = (self, _candidates(self, all_items, call.arguments["segments"],
                                                call.arguments["exclusive_start_key"]))
        try:
            return scan(self, *args, **kwargs)
        finally:
            _scanning.override = None

    Table.all_items = scanned_all_items  # type: ignore[method-assign,assignment]
    Table.scan = ordered_scan  # type: ignore[method-assign]
    Table.put_item = _ticking(Table.put_item)  # type: ignore[method-assign]
    Table.delete_item = _ticking(Table.delete_item)  # type: ignore[method-assign]
    _applied = True


def _ticking(write: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(write)
    def ticked(self: Table, *args: Any, **kwargs: Any) -> Any:
        try:
            return write(self, *args, **kwargs)
        finally:
            # After the write, failed or not: an order kept from before this tick is stale.
            _written[self] = next(_ticks)
    return ticked


def _candidates(table: Table, all_items: Callable[[Table], list[Item]], segments: Segments,
                start_key: dict[str, Any] | None) -> Iterator[Item]:
    """moto's order of `table` from the first item its Scan loop would not skip. A generator,
    so the work (and any error of it) happens where moto's loop asks for its first item."""
    items = _kept(table, all_items, segments)
    start = 0 if start_key is None else _start(table, items, start_key)
    yield from map(items.__getitem__, range(start, len(items)))


def _start(table: Table, items: list[Item], start_key: dict[str, Any]) -> int:
    """Where in `items` moto's loop stops skipping items at or before `start_key`."""
    def after_start(item: Item) -> bool:
        # With the key attributes and direction moto's base-table Scan gives the same test.
        return not table._item_comes_before_dct(
            item, start_key, [table.hash_key_attr], [table.range_key_attr], True)
    return bisect.bisect_left(items, True, key=after_start)


def _kept(table: Table, all_items: Callable[[Table], list[Item]],
          segments: Segments) -> list[Item]:
    with _keeping:
        # Read before the order is taken: a write landing meanwhile ticks after it, so this
        # order is not reused.
        written = _written.get(table)
        order = _orders.get(table)
        if order is None or order.written != written:
            order = _orders[table] = _Order(written, all_items(table))
        return order.of(segments)


def _share(items: list[Item], segments: Segments) -> list[Item]:
    share: list[Item] = []
    value: object = None
    within = False
    for item in items:
        # moto hashes the hash key's value only, and a partition's items are adjacent.
        if item.hash_key.value != value:
            value, within = item.hash_key.value, item.is_within_segment(segments)
        if within:
            share.append(item)
    return share
