"""Keys of the lake this package reads and writes, under the prefixes of hdfs_events.names.

raw/cluster=<c>/dt=<YYYY-MM-DD>/hour=<HH>/<name>.jsonl.gz        written by the consumer Lambda
curated/events/cluster=<c>/dt=<d>/run=<run id>/part-*.parquet    compact_events, one run each
curated/activity_daily/dt=<d>/, curated/mass_deletes/dt=<d>/     activity_rollups
curated/gaps_daily/dt=<d>/                                       activity_rollups
curated/_catalog/events.json                                    local partition catalog
curated/_state/compact_events/raw/cluster=<c>/dt=<d>.json         compaction watermark
curated/_state/activity_rollups/pending/run=<id>/days.json         days compaction marked
curated/_state/activity_rollups/owners/through=<d>/               owner state after day d
quarantine/glue/compact_events/...                               what compaction refused
raw-audit/cluster=<c>/dt=<d>/hour=<HH>/<host>-<file id>-<offset>.jsonl.gz   the agent's audit run
curated/audit/cluster=<c>/dt=<d>/run=<run id>/part-*.parquet     compact_audit, one run each
curated/_catalog/audit.json                                     local partition catalog (audit)
curated/_state/compact_audit/raw-audit/cluster=<c>/dt=<d>.json   audit compaction watermark
quarantine/glue/compact_audit/...                                what the audit compaction refused
fsimage/cluster=<c>/txid=<t>/fsimage_<t>                          the agent's upload of a checkpoint
curated/namespace_inventory/cluster=<c>/image_date=<d>/run=<id>/  namespace_inventory, one run each
curated/_catalog/namespace_inventory.json                         local partition catalog (inventory)
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from hdfs_events.inventory_schema import INVENTORY_TABLE
from hdfs_events.names import (
    AUDIT_RAW_PREFIX,
    CURATED_PREFIX,
    FSIMAGE_PREFIX,
    QUARANTINE_PREFIX,
    RAW_PREFIX,
)

EVENTS_TABLE = "events"
ACTIVITY_TABLE = "activity_daily"
MASS_DELETE_TABLE = "mass_deletes"
GAPS_TABLE = "gaps_daily"

EVENTS_PREFIX = f"{CURATED_PREFIX}{EVENTS_TABLE}/"
ACTIVITY_PREFIX = f"{CURATED_PREFIX}{ACTIVITY_TABLE}/"
MASS_DELETE_PREFIX = f"{CURATED_PREFIX}{MASS_DELETE_TABLE}/"
GAPS_PREFIX = f"{CURATED_PREFIX}{GAPS_TABLE}/"
LOCAL_CATALOG_KEY = f"{CURATED_PREFIX}_catalog/{EVENTS_TABLE}.json"
STATE_PREFIX = f"{CURATED_PREFIX}_state/compact_events/raw/"
ROLLUP_PENDING_PREFIX = f"{CURATED_PREFIX}_state/activity_rollups/pending/"
OWNER_STATE_PREFIX = f"{CURATED_PREFIX}_state/activity_rollups/owners/"
QUARANTINE_GLUE_PREFIX = f"{QUARANTINE_PREFIX}glue/compact_events/"

RAW_KEY = re.compile(
    re.escape(RAW_PREFIX)
    + r"cluster=(?P<cluster>[^/]+)/dt=(?P<dt>\d{4}-\d{2}-\d{2})/hour=(?P<hour>\d{2})/"
    r"(?P<name>[^/]+\.jsonl\.gz)"
)
# The names RAW_KEY accepts, as a Hadoop glob (Spark's pathGlobFilter).
RAW_OBJECT_GLOB = "*.jsonl.gz"
# The audit table (glue_jobs/compact_audit.py, glue_jobs/audit_schema.py).
AUDIT_TABLE = "audit"
AUDIT_PREFIX = f"{CURATED_PREFIX}{AUDIT_TABLE}/"
AUDIT_LOCAL_CATALOG_KEY = f"{CURATED_PREFIX}_catalog/{AUDIT_TABLE}.json"
AUDIT_STATE_PREFIX = f"{CURATED_PREFIX}_state/compact_audit/raw-audit/"
QUARANTINE_AUDIT_PREFIX = f"{QUARANTINE_PREFIX}glue/compact_audit/"
AUDIT_RAW_KEY = re.compile(
    re.escape(AUDIT_RAW_PREFIX)
    + r"cluster=(?P<cluster>[^/]+)/dt=(?P<dt>\d{4}-\d{2}-\d{2})/hour=(?P<hour>\d{2})/"
    r"(?P<name>[^/]+\.jsonl\.gz)"
)
RUN_ID = re.compile(r"(?P<stamp>\d{8}T\d{6}Z)-[0-9a-f]{8}")


@dataclass(frozen=True, slots=True)
class RawKey:
    cluster: str
    dt: str
    hour: str
    name: str

    @property
    def partition(self) -> tuple[str, str]:
        return (self.cluster, self.dt)

    @property
    def member(self) -> str:
        """The object's name inside its (cluster, dt) state document."""
        return f"hour={self.hour}/{self.name}"


def parse_raw_key(key: str) -> RawKey | None:
    m = RAW_KEY.fullmatch(key)
    return None if m is None else RawKey(m["cluster"], m["dt"], m["hour"], m["name"])


def new_run_id(now: datetime | None = None) -> str:
    """Sortable and unique: UTC start time plus 32 random bits (two runs in one second)."""
    now = now or datetime.now(UTC)
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(4)}"


def run_started(run_id: str) -> datetime | None:
    m = RUN_ID.fullmatch(run_id)
    if m is None:
        return None
    return datetime.strptime(m["stamp"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)


def partition_prefix(cluster: str, dt: str) -> str:
    return f"{EVENTS_PREFIX}cluster={cluster}/dt={dt}/"


def run_prefix(cluster: str, dt: str, run_id: str) -> str:
    return f"{partition_prefix(cluster, dt)}run={run_id}/"


def state_key(cluster: str, dt: str) -> str:
    return f"{STATE_PREFIX}cluster={cluster}/dt={dt}.json"


def rollup_pending_key(run_id: str) -> str:
    """The days a compaction run marked for the rollups (glue_jobs.rollup_days)."""
    return f"{ROLLUP_PENDING_PREFIX}run={run_id}/days.json"


def owner_state_prefix(through: str) -> str:
    """The owner state after day `through` (glue_jobs.rollup_days): Spark's files under
    data/, then commit/done.json, written last."""
    return f"{OWNER_STATE_PREFIX}through={through}/"


def parse_audit_raw_key(key: str) -> RawKey | None:
    """An audit object's key (hdfs_events.names.audit_object_key) as the watermark tracks it."""
    m = AUDIT_RAW_KEY.fullmatch(key)
    return None if m is None else RawKey(m["cluster"], m["dt"], m["hour"], m["name"])


def audit_partition_prefix(cluster: str, dt: str) -> str:
    return f"{AUDIT_PREFIX}cluster={cluster}/dt={dt}/"


def audit_run_prefix(cluster: str, dt: str, run_id: str) -> str:
    return f"{audit_partition_prefix(cluster, dt)}run={run_id}/"


def audit_state_key(cluster: str, dt: str) -> str:
    return f"{AUDIT_STATE_PREFIX}cluster={cluster}/dt={dt}.json"


# The namespace inventory (glue_jobs/namespace_inventory.py). The fsimage it reads is where the
# agent's fetch-image puts it: hdfs_events.names.fsimage_key (the NameNode's own file name,
# fsimage_<19-digit txid>, under its cluster and txid).
INVENTORY_PREFIX = f"{CURATED_PREFIX}{INVENTORY_TABLE}/"
INVENTORY_LOCAL_CATALOG_KEY = f"{CURATED_PREFIX}_catalog/{INVENTORY_TABLE}.json"
FSIMAGE_KEY = re.compile(re.escape(FSIMAGE_PREFIX)
                         + r"cluster=(?P<cluster>[^/]+)/txid=(?P<txid>\d+)/fsimage_(?P<name_txid>\d{19})")


def parse_fsimage_key(key: str) -> tuple[str, int] | None:
    """(cluster, txid) of a key hdfs_events.names.fsimage_key made; None for any other key."""
    m = FSIMAGE_KEY.fullmatch(key)
    if m is None or int(m["txid"]) != int(m["name_txid"]):
        return None
    return m["cluster"], int(m["txid"])


def inventory_partition_prefix(cluster: str, image_date: str) -> str:
    return f"{INVENTORY_PREFIX}cluster={cluster}/image_date={image_date}/"


def inventory_run_prefix(cluster: str, image_date: str, run_id: str) -> str:
    return f"{inventory_partition_prefix(cluster, image_date)}run={run_id}/"
