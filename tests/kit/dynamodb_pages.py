"""Every page of a paged DynamoDB read (Query or Scan), for tests that compare pages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def all_pages(read: Callable[..., dict[str, Any]],
              between: Callable[[int], None] = lambda _: None,
              **params: Any) -> list[dict[str, Any]]:
    """Every page of `read(**params)` (a client's query or scan), following LastEvaluatedKey,
    without ResponseMetadata; `between(i)` runs after page i when another follows."""
    pages = []
    while True:
        page = read(**params)
        page.pop("ResponseMetadata")
        pages.append(page)
        if "LastEvaluatedKey" not in page:
            return pages
        between(len(pages) - 1)
        params = {**params, "ExclusiveStartKey": page["LastEvaluatedKey"]}
