"""The Glue jobs' own keys in the lake: their state, local catalogs and quarantine. The keys
they share with other components (raw objects, the fsimage, curated tables and their run
folders) are the contract's: hdfs_events/lake_layout.py.

curated/_catalog/<table>.json                                    local partition catalog
curated/_state/compact_events/raw/cluster=<c>/dt=<d>.json         compaction watermark
curated/_state/compact_audit/raw-audit/cluster=<c>/dt=<d>.json   audit compaction watermark
curated/_state/activity_rollups/pending/run=<id>/days.json         days compaction marked
curated/_state/activity_rollups/owners/through=<d>/               owner state after day d
curated/_state/attribute_events/inputs.json                       the attribution's inputs
quarantine/glue/compact_events/..., quarantine/glue/compact_audit/...   what a compaction refused
"""

from __future__ import annotations

from hdfs_events.lake_layout import (
    ATTRIBUTION_TABLE,
    AUDIT_RAW_PREFIX,
    AUDIT_TABLE,
    CURATED_PREFIX,
    EVENTS_TABLE,
    INVENTORY_TABLE,
    QUARANTINE_PREFIX,
    RAW_PREFIX,
    partition_path,
)

_STATE = f"{CURATED_PREFIX}_state/"
STATE_PREFIX = f"{_STATE}compact_events/{RAW_PREFIX}"
AUDIT_STATE_PREFIX = f"{_STATE}compact_audit/{AUDIT_RAW_PREFIX}"
ROLLUP_PENDING_PREFIX = f"{_STATE}activity_rollups/pending/"
OWNER_STATE_PREFIX = f"{_STATE}activity_rollups/owners/"
ATTRIBUTION_INPUTS_KEY = f"{_STATE}attribute_events/inputs.json"
QUARANTINE_GLUE_PREFIX = f"{QUARANTINE_PREFIX}glue/compact_events/"
QUARANTINE_AUDIT_PREFIX = f"{QUARANTINE_PREFIX}glue/compact_audit/"


def local_catalog_key(table: str) -> str:
    """The partition catalog a run without Glue's keeps in the lake (glue_jobs/catalog.py)."""
    return f"{CURATED_PREFIX}_catalog/{table}.json"


LOCAL_CATALOG_KEY = local_catalog_key(EVENTS_TABLE)
AUDIT_LOCAL_CATALOG_KEY = local_catalog_key(AUDIT_TABLE)
INVENTORY_LOCAL_CATALOG_KEY = local_catalog_key(INVENTORY_TABLE)
ATTRIBUTION_LOCAL_CATALOG_KEY = local_catalog_key(ATTRIBUTION_TABLE)


def state_key(cluster: str, dt: str) -> str:
    return f"{STATE_PREFIX}{partition_path(cluster, dt)}.json"


def audit_state_key(cluster: str, dt: str) -> str:
    return f"{AUDIT_STATE_PREFIX}{partition_path(cluster, dt)}.json"


def rollup_pending_key(run_id: str) -> str:
    """The days a compaction run marked for the rollups (glue_jobs.rollup_days)."""
    return f"{ROLLUP_PENDING_PREFIX}run={run_id}/days.json"


def owner_state_prefix(through: str) -> str:
    """The owner state after day `through` (glue_jobs.rollup_days): Spark's files under
    data/, then commit/done.json, written last."""
    return f"{OWNER_STATE_PREFIX}through={through}/"
