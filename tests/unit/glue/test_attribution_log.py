"""The attribution job's CloudWatch Logs lines without AWS or Spark (glue_jobs/attribution_log.py):
PutLogEvents batch limits, and the saved Logs Insights queries (stacks/saved_queries.py) against
the keys a line carries: moto runs no Logs Insights query, so the queries are checked, not run.
The lines a job run logs are tested in tests/integration/glue/test_attribution_job.py."""

from __future__ import annotations

import re

import pytest

from glue_jobs.attribution_log import (
    EVENT_OVERHEAD,
    LINE_FIELDS,
    MAX_BATCH_BYTES,
    MAX_BATCH_EVENTS,
    MAX_EVENT_BYTES,
    batches,
)
from stacks.saved_queries import ATTRIBUTION_LOGS_QUERIES


def test_batches_keep_within_put_log_events_limits():
    small = ["x" * 10] * (MAX_BATCH_EVENTS + 1)
    assert [len(b) for b in batches(small)] == [MAX_BATCH_EVENTS, 1]
    big = ["y" * 200_000] * 6
    sizes = [sum(len(m) + EVENT_OVERHEAD for m in b) for b in batches(big)]
    assert sizes == [5 * (200_000 + EVENT_OVERHEAD), 200_000 + EVENT_OVERHEAD]
    assert max(sizes) <= MAX_BATCH_BYTES
    with pytest.raises(ValueError, match="event limit"):
        list(batches(["z" * (MAX_EVENT_BYTES + 1)]))


# Logs Insights words the saved queries use; anything else a query names must be a line key.
_QUERY_WORDS = {"fields", "filter", "stats", "sort", "dedup", "limit", "by", "as", "asc",
                "desc", "and", "or", "not", "like", "in", "count", "latest", "coalesce",
                "ispresent"}


def test_the_saved_queries_name_only_keys_the_lines_carry():
    for name, query in ATTRIBUTION_LOGS_QUERIES.items():
        text = re.sub(r"'[^']*'|/(?:\\.|[^/\\])+/|@\w+|#.*", " ", query)
        aliases = set(re.findall(r"\bas\s+(\w+)", text))
        named = set(re.findall(r"\b[A-Za-z_]\w*\b", text)) - aliases
        named = {w for w in named if w.lower() not in _QUERY_WORDS and not w.isdigit()}
        assert named <= set(LINE_FIELDS), (name, named - set(LINE_FIELDS))
        # one answer per event: the latest line of each (cluster, txid, index)
        assert ("dedup cluster, txid, index" in query
                or "by cluster, txid, index" in query), name
