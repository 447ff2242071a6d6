"""The product's promise, end to end: every HDFS event appears once in the compacted lake
despite agent crashes, redelivery and retries; poison is quarantined with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from hdfs_events.event import FIELDS
from tests.kit.lake_reads import curated_table, quarantined_messages
from tests.kit.local_chain import POISON_BODIES

pytestmark = pytest.mark.slow


def _comparable(row: dict) -> dict:
    return {name: row[name] for name in FIELDS}


def test_the_chain_really_was_disturbed(chain_run) -> None:
    # At least one SIGKILL mid-flight (after SQS acknowledged some events, before the agent
    # logged its replay done); how many more land before this small replay ends depends on the
    # machine's speed. The ten-kill crash test is tests/integration/agent/test_crash.py.
    assert chain_run.mid_flight_kills >= 1, (
        f"no kill of {chain_run.kills} came before the agent finished: grow the workload")
    assert chain_run.consumer["injected_faults"] > 0
    assert chain_run.consumer["failures"] >= chain_run.consumer["injected_faults"]


def test_compacted_lake_equals_the_source_events_exactly(chain_run) -> None:
    table = curated_table(chain_run.lake)
    lake_rows = sorted((_comparable(r) for r in table.to_pylist()),
                       key=lambda r: (r["txid"], r["index"]))
    source_rows = [_comparable(e.to_dict()) for e in chain_run.source]
    assert len(lake_rows) == len(source_rows)
    keys = [(r["cluster"], r["txid"], r["index"]) for r in lake_rows]
    assert len(set(keys)) == len(keys), "a (cluster, txid, index) appears twice in the lake"
    assert lake_rows == source_rows


def test_the_namespace_index_equals_the_source_applied_in_order(chain_run) -> None:
    """Through SIGKILLs (re-sent events, re-packed messages, overlapping manifests) and
    redelivery: what `hdfs-events index` reads under the indexed prefixes is the namespace the
    source events build in txid order, nothing more (but paths older than the logs)."""
    index = chain_run.index
    assert index.differences == ()
    assert index.expected > 20 and index.entries == index.expected + index.learned
    assert index.exact


def test_re_sent_events_reached_raw_and_were_removed_by_compaction(chain_run) -> None:
    # SIGKILL loses the agent's unacknowledged progress: it re-sends from its checkpoint, and
    # the copies SQS did not deduplicate land in raw/ as objects of their own.
    assert chain_run.compaction["events_read"] >= len(chain_run.source)
    assert chain_run.compaction["events_added"] == len(chain_run.source)


def test_poison_bodies_are_quarantined_with_their_reasons(chain_run) -> None:
    records = quarantined_messages(chain_run.lake)
    assert len(records) == len(POISON_BODIES)
    reasons = " | ".join(r["reason"] for r in records)
    for expected in ("not JSON", "version 99", "gzip", "index"):
        assert expected in reasons
    assert {r["body"] for r in records} == {body for body, _ in POISON_BODIES}


def test_nothing_is_left_in_the_dead_letter_queue(chain_run) -> None:
    assert chain_run.dlq_depth == 0  # the event queue's and the apply queue's
    assert chain_run.chain.queue_depth() == 0
    assert chain_run.chain.queue_depth(chain_run.chain.outputs["ApplyQueueUrl"]) == 0


def test_mass_delete_is_flagged_by_the_rollups(chain_run) -> None:
    assert chain_run.rollups["mass_delete_windows"] >= 1


def test_log_lines_carry_what_the_logs_insights_queries_need(chain_run) -> None:
    import json

    lines = [json.loads(line) for line in Path(chain_run.log_path).read_text().splitlines()
             if line.startswith('{"level"')]
    events = [line for line in lines if line.get("message") == "hdfs event"]
    assert events, "no per-event log lines"
    for key in ("cluster", "txid", "index", "type", "path"):
        assert all(key in line for line in events[:50]), key
