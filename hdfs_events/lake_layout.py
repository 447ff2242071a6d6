"""The lake bucket's keys: every key one component writes and another reads (or the stacks
grant, or a catalog table locates), built and parsed here and nowhere else.

    raw/cluster=<c>/dt=<YYYY-MM-DD>/hour=<HH>/<name>.jsonl.gz          consumer -> compact_events
    raw-audit/cluster=<c>/dt=<d>/hour=<HH>/<host>-<file id>-<offset>.jsonl.gz
                                                                       agent's audit run -> compact_audit
    fsimage/cluster=<c>/txid=<t>/fsimage_<t, 19 digits>, _fetched.json, _indexed.json
                                                                       fetch-image <-> inventory job
    curated/<table>/cluster=<c>/dt=<d>/run=<run id>/part-*.parquet     Glue jobs -> catalog, Athena
    curated/namespace_inventory/cluster=<c>/image_date=<d>/run=<run id>/
    curated/<rollup table>/dt=<d>/                                     activity_rollups -> catalog
    quarantine/                                                        what a component refused
    scripts/                                                           the Glue jobs' scripts

Partitions are Hive-style `key=value` folders, as Glue's catalog and Athena read them. A
curated partition holds one `run=<run id>` folder per run; the catalog points at the newest
whole one, so a reader never sees a run half written.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from hdfs_events.inventory_schema import INVENTORY_TABLE

RAW_PREFIX = "raw/"
CURATED_PREFIX = "curated/"
QUARANTINE_PREFIX = "quarantine/"
SCRIPTS_PREFIX = "scripts/"
# The NameNode's audit log (hdfs_events/audit.py), written by the agent's `audit run`. A prefix
# of its own, not under raw/: the event compaction lists raw/ whole every run, and audit objects
# outnumber event objects by the reads and denials they hold.
AUDIT_RAW_PREFIX = "raw-audit/"
# The NameNode's checkpoint as `hdfs-events-agent fetch-image` uploads it (`hdfs dfsadmin
# -fetchImage`), under the name the NameNode gives it, and the fetch marker beside it, last.
FSIMAGE_PREFIX = "fsimage/"

# --- Raw objects -------------------------------------------------------------------------
# The names a raw key may end in, as a Hadoop glob (Spark's pathGlobFilter) and a pattern.
RAW_OBJECT_GLOB = "*.jsonl.gz"
_RAW_NAME = r"[^/]+\.jsonl\.gz"
_HOURLY = r"cluster=(?P<cluster>[^/]+)/dt=(?P<dt>\d{4}-\d{2}-\d{2})/hour=(?P<hour>\d{2})/"
RAW_KEY = re.compile(re.escape(RAW_PREFIX) + _HOURLY + f"(?P<name>{_RAW_NAME})")
AUDIT_RAW_KEY = re.compile(re.escape(AUDIT_RAW_PREFIX) + _HOURLY + f"(?P<name>{_RAW_NAME})")


@dataclass(frozen=True, slots=True)
class RawKey:
    """A raw object's key (events or audit lines), as the compaction's watermark tracks it."""

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


def raw_key(cluster: str, dt: str, hour: str, name: str) -> str:
    """The consumer's object for a message's events of one hour (dt YYYY-MM-DD, hour HH)."""
    return f"{RAW_PREFIX}{partition_path(cluster, dt)}/hour={hour}/{name}"


def parse_raw_key(key: str) -> RawKey | None:
    m = RAW_KEY.fullmatch(key)
    return None if m is None else RawKey(m["cluster"], m["dt"], m["hour"], m["name"])


def raw_key_in_path(prefix: str) -> str:
    """A pattern whose group 1 is the store key of a raw object under `prefix` (RAW_PREFIX or
    AUDIT_RAW_PREFIX) at the end of the path Spark reports for it (file:/..., s3://...).
    Spelt apart from RAW_KEY: Spark's regexp_extract runs Java's regex, which has no Python
    `(?P<name>...)` groups."""
    return f"({re.escape(prefix)}cluster=[^/]+/dt=[^/]+/hour=[^/]+/[^/]+)$"


def audit_cluster_prefix(cluster: str) -> str:
    """What a cluster's principal may write (s3:PutObject on this prefix and nothing else)."""
    return f"{AUDIT_RAW_PREFIX}cluster={cluster}/"


def audit_object_key(cluster: str, time_ms: int, host: str, file_id: str,
                     first_offset: int) -> str:
    """The object of the audit lines from `first_offset` of one log file: a re-send after a
    crash starts at the same line, so it rewrites the same key. `time_ms` is the time of the
    object's first line (the hour the compaction finds it in)."""
    at = datetime.fromtimestamp(time_ms / 1000, UTC)
    return (f"{AUDIT_RAW_PREFIX}{partition_path(cluster, f'{at:%Y-%m-%d}')}/hour={at:%H}/"
            f"{host}-{file_id}-{first_offset}.jsonl.gz")


def parse_audit_raw_key(key: str) -> RawKey | None:
    """An audit object's key (audit_object_key) as the watermark tracks it."""
    m = AUDIT_RAW_KEY.fullmatch(key)
    return None if m is None else RawKey(m["cluster"], m["dt"], m["hour"], m["name"])


# --- The fsimage -------------------------------------------------------------------------
FSIMAGE_KEY = re.compile(re.escape(FSIMAGE_PREFIX)
                         + r"cluster=(?P<cluster>[^/]+)/txid=(?P<txid>\d+)/fsimage_(?P<name_txid>\d{19})")


def fsimage_cluster_prefix(cluster: str) -> str:
    """What a cluster's principal may write its images under (and nothing else of fsimage/)."""
    return f"{FSIMAGE_PREFIX}cluster={cluster}/"


def fsimage_key(cluster: str, txid: int) -> str:
    """The image of the last transaction `txid`, under the name the NameNode gives it."""
    return f"{fsimage_cluster_prefix(cluster)}txid={txid}/fsimage_{txid:019d}"


def fsimage_marker_key(cluster: str, txid: int) -> str:
    """The fetch marker beside the image (JSON: txid, size, crc32c, fetched_at, namenode):
    written after the image, so an image with a marker is whole."""
    return f"{fsimage_cluster_prefix(cluster)}txid={txid}/_fetched.json"


def fsimage_indexed_key(cluster: str, txid: int) -> str:
    """The marker the inventory job writes beside the image once it has written the namespace
    index from it and put the sequencer's position at txid (JSON: counts and seconds): the
    agent's first start from the image waits for it, then streams from txid + 1."""
    return f"{fsimage_cluster_prefix(cluster)}txid={txid}/_indexed.json"


_INDEXED = re.compile(r"txid=(\d+)/_indexed\.json$")


def indexed_txid(key: str) -> int | None:
    """The txid of a key fsimage_indexed_key made; None for any other key."""
    m = _INDEXED.search(key)
    return None if m is None else int(m[1])


def parse_fsimage_key(key: str) -> tuple[str, int] | None:
    """(cluster, txid) of a key fsimage_key made; None for any other key."""
    m = FSIMAGE_KEY.fullmatch(key)
    if m is None or int(m["txid"]) != int(m["name_txid"]):
        return None
    return m["cluster"], int(m["txid"])


# --- Curated tables (the Glue catalog's names; the stacks define them, the jobs write them) --
EVENTS_TABLE = "events"
ACTIVITY_TABLE = "activity_daily"
MASS_DELETES_TABLE = "mass_deletes"
GAPS_TABLE = "gaps_daily"
AUDIT_TABLE = "audit"
ATTRIBUTION_TABLE = "attribution"

EVENTS_PREFIX = f"{CURATED_PREFIX}{EVENTS_TABLE}/"
ACTIVITY_PREFIX = f"{CURATED_PREFIX}{ACTIVITY_TABLE}/"
MASS_DELETES_PREFIX = f"{CURATED_PREFIX}{MASS_DELETES_TABLE}/"
GAPS_PREFIX = f"{CURATED_PREFIX}{GAPS_TABLE}/"
AUDIT_PREFIX = f"{CURATED_PREFIX}{AUDIT_TABLE}/"
ATTRIBUTION_PREFIX = f"{CURATED_PREFIX}{ATTRIBUTION_TABLE}/"
INVENTORY_PREFIX = f"{CURATED_PREFIX}{INVENTORY_TABLE}/"
# The inventory's date partition is the image's date, not an event's.
INVENTORY_DATE = "image_date"

# A run folder: its UTC start, sortable, and 32 random bits (two runs in one second).
RUN_ID = re.compile(r"(?P<stamp>\d{8}T\d{6}Z)-[0-9a-f]{8}")
# A file of a (cluster, dt) table's run folder, at the end of its path: groups cluster and dt.
RUN_FILE_PARTITION = r"cluster=([^/]+)/dt=([^/]+)/run=[^/]+/[^/]+$"


def partition_path(cluster: str, date: str, *, date_key: str = "dt") -> str:
    """`cluster=<c>/dt=<d>`: a (cluster, date) partition below its table's prefix (the Glue
    jobs' own state documents are named by it too)."""
    return f"cluster={cluster}/{date_key}={date}"


def partition_prefix(table_prefix: str, cluster: str, date: str, *,
                     date_key: str = "dt") -> str:
    """A curated table's (cluster, date) partition; date_key INVENTORY_DATE for the inventory."""
    return f"{table_prefix}{partition_path(cluster, date, date_key=date_key)}/"


def run_prefix(table_prefix: str, cluster: str, date: str, run_id: str, *,
               date_key: str = "dt") -> str:
    """One run's folder inside the partition: written whole before the catalog points at it."""
    return f"{partition_prefix(table_prefix, cluster, date, date_key=date_key)}run={run_id}/"


def new_run_id(now: datetime | None = None) -> str:
    """Sortable and unique: UTC start time plus 32 random bits (two runs in one second)."""
    now = now or datetime.now(UTC)
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(4)}"


def run_started(run_id: str) -> datetime | None:
    m = RUN_ID.fullmatch(run_id)
    if m is None:
        return None
    return datetime.strptime(m["stamp"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
