"""What the Glue Data Catalog says about the lake: table layouts and the Athena named queries.

The curated events table has one column per field of the contract (hdfs_events.event.FIELDS),
`cluster` and `dt` being partition keys; a field added to the contract without a type here
stops the synth, so catalog and contract cannot drift apart silently.
"""

from __future__ import annotations

import typing

from aws_cdk import aws_glue as glue

from hdfs_events.audit import RECORD_FIELDS, AuditRecord
from hdfs_events.event import FIELDS
from hdfs_events.inventory_schema import INVENTORY_FILE_COLUMNS, INVENTORY_PARTITION_COLUMNS
from hdfs_events.lake_layout import (
    ACTIVITY_TABLE,
    ATTRIBUTION_TABLE,
    AUDIT_TABLE,
    EVENTS_TABLE,
    GAPS_TABLE,
    MASS_DELETES_TABLE,
)
from hdfs_events.lake_queries import history_of_one_path

_XATTR = glue.Schema.struct([
    glue.Column(name="namespace", type=glue.Schema.STRING),
    glue.Column(name="name", type=glue.Schema.STRING),
    glue.Column(name="value", type=glue.Schema.STRING),
])
# Types of the Parquet columns the compaction job writes (glue_jobs/schema.py: every int of the
# contract is a Spark long, txids and epoch milliseconds exceeding 32 bits).
EVENT_FIELD_TYPES: dict[str, glue.Type] = {
    "cluster": glue.Schema.STRING,
    "txid": glue.Schema.BIG_INT,
    "index": glue.Schema.BIG_INT,
    "type": glue.Schema.STRING,
    "path": glue.Schema.STRING,
    "dst_path": glue.Schema.STRING,
    "timestamp": glue.Schema.BIG_INT,
    "inode_type": glue.Schema.STRING,
    "ctime": glue.Schema.BIG_INT,
    "replication": glue.Schema.BIG_INT,
    "owner": glue.Schema.STRING,
    "group": glue.Schema.STRING,
    "perms": glue.Schema.STRING,
    "symlink_target": glue.Schema.STRING,
    "overwrite": glue.Schema.BOOLEAN,
    "block_size": glue.Schema.BIG_INT,
    "erasure_coded": glue.Schema.BOOLEAN,
    "size": glue.Schema.BIG_INT,
    "new_block": glue.Schema.BOOLEAN,
    "metadata_type": glue.Schema.STRING,
    "mtime": glue.Schema.BIG_INT,
    "atime": glue.Schema.BIG_INT,
    "acls": glue.Schema.array(glue.Schema.STRING),
    "xattrs": glue.Schema.array(_XATTR),
    "xattrs_removed": glue.Schema.BOOLEAN,
    "gap_end_txid": glue.Schema.BIG_INT,
    "children_num": glue.Schema.BIG_INT,  # a Java int in HDFS; every int field is BIG_INT here
}
EVENT_PARTITION_KEYS = ("cluster", "dt")


def event_columns() -> list[glue.Column]:
    """The contract's fields minus the partition keys, in contract order."""
    missing = [f for f in FIELDS if f not in EVENT_FIELD_TYPES]
    if missing:
        raise KeyError(f"stacks/lake_catalog.py: no Glue type for contract field(s) {missing}")
    return [glue.Column(name=f, type=EVENT_FIELD_TYPES[f]) for f in FIELDS
            if f not in EVENT_PARTITION_KEYS]


def event_partition_keys() -> list[glue.Column]:
    return [glue.Column(name="cluster", type=glue.Schema.STRING),
            glue.Column(name="dt", type=glue.Schema.STRING, comment="YYYY-MM-DD (UTC)")]


# The audit table (glue_jobs/audit_schema.py): the audit record's fields less the partition keys
# and the two set only on a line the agent could not parse (the compaction quarantines those).
AUDIT_UNPARSED_FIELDS = ("raw", "reason")
_AUDIT_TYPES: dict[object, glue.Type] = {
    str | None: glue.Schema.STRING, str: glue.Schema.STRING,
    int | None: glue.Schema.BIG_INT, int: glue.Schema.BIG_INT,
    bool | None: glue.Schema.BOOLEAN,
}


def audit_columns() -> list[glue.Column]:
    """The record's fields (hdfs_events.audit.AuditRecord) in record order, less the partition
    keys and the unparsed-line fields; a field of a type without a Glue type stops the synth."""
    hints = typing.get_type_hints(AuditRecord)
    unknown = [f for f in RECORD_FIELDS if hints[f] not in _AUDIT_TYPES]
    if unknown:
        raise KeyError(f"stacks/lake_catalog.py: no Glue type for audit field(s) {unknown}")
    return [glue.Column(name=f, type=_AUDIT_TYPES[hints[f]]) for f in RECORD_FIELDS
            if f not in EVENT_PARTITION_KEYS and f not in AUDIT_UNPARSED_FIELDS]


def _columns(*spec: tuple[str, glue.Type]) -> list[glue.Column]:
    return [glue.Column(name=n, type=t) for n, t in spec]


# As glue_jobs/attribution.py writes them (ATTRIBUTION_SCHEMA), less the partition keys.
def attribution_columns() -> list[glue.Column]:
    s = glue.Schema
    return _columns(("txid", s.BIG_INT), ("index", s.BIG_INT), ("user", s.STRING),
                    ("auth", s.STRING), ("real_user", s.STRING), ("client_ip", s.STRING),
                    ("caller_context", s.STRING), ("audit_host", s.STRING),
                    ("audit_file_id", s.STRING), ("audit_offset", s.BIG_INT))


_HIVE_TYPES: dict[str, glue.Type] = {"string": glue.Schema.STRING, "bigint": glue.Schema.BIG_INT,
                                     "int": glue.Schema.INTEGER, "boolean": glue.Schema.BOOLEAN}


def inventory_columns() -> list[glue.Column]:
    """hdfs_events.inventory_schema's file columns, the job's own list."""
    return _columns(*((n, _HIVE_TYPES[t]) for n, t in INVENTORY_FILE_COLUMNS))


def inventory_partition_keys() -> list[glue.Column]:
    return _columns(*((n, _HIVE_TYPES[t]) for n, t in INVENTORY_PARTITION_COLUMNS))


# Rollup columns as glue_jobs/rollups.py writes them (ACTIVITY_COLUMNS, MASS_DELETE_COLUMNS).
def activity_columns() -> list[glue.Column]:
    s = glue.Schema
    return _columns(("cluster", s.STRING), ("prefix", s.STRING), ("owner", s.STRING),
                    ("files_created", s.BIG_INT), ("files_deleted", s.BIG_INT),
                    ("files_renamed", s.BIG_INT), ("bytes_written", s.BIG_INT),
                    ("small_files_created", s.BIG_INT), ("net_file_count_change", s.BIG_INT),
                    ("files_overwritten", s.BIG_INT), ("bytes_replaced", s.BIG_INT),
                    ("bytes_deleted", s.BIG_INT), ("bytes_truncated", s.BIG_INT))


def mass_delete_columns() -> list[glue.Column]:
    s = glue.Schema
    return _columns(("cluster", s.STRING), ("scope", s.STRING), ("subject", s.STRING),
                    ("window_start", s.TIMESTAMP), ("window_end", s.TIMESTAMP),
                    ("unlinks", s.BIG_INT), ("first_txid", s.BIG_INT), ("last_txid", s.BIG_INT),
                    ("trash_moves", s.BIG_INT), ("files_removed", s.BIG_INT),
                    ("bytes_removed", s.BIG_INT), ("root_path", s.STRING), ("user", s.STRING),
                    ("unattributed_deletes", s.BIG_INT))


def gap_columns() -> list[glue.Column]:
    s = glue.Schema
    return _columns(("cluster", s.STRING), ("gaps", s.BIG_INT), ("lost_txids", s.BIG_INT),
                    ("first_lost_txid", s.BIG_INT), ("last_lost_txid", s.BIG_INT),
                    ("snapshot_records", s.BIG_INT))


def dt_partition() -> list[glue.Column]:
    return [glue.Column(name="dt", type=glue.Schema.STRING, comment="YYYY-MM-DD (UTC)")]


# Partitions of the rollup tables, as Athena projects them (no catalog partitions to register).
# The rollups job writes each day with Spark's partitionBy("dt") under curated/<table>/, i.e.
# Hive style dt=<yyyy-MM-dd>/. The first day is before Hadoop 2.6 (Nov 2014), the first release
# with inotify; a replayed older edit log files its events under their NameNode day, so days
# before this one would exist in S3 and stay invisible to Athena. NOW+1DAYS: an event stamped by
# a NameNode clock a little ahead of UTC midnight is filed under tomorrow. Athena lists every
# projected day a query does not rule out: every saved query bounds `dt`.
PROJECTED_DT_FORMAT = "yyyy-MM-dd"
PROJECTED_FIRST_DT = "2014-01-01"
PROJECTED_LAST_DT = "NOW+1DAYS"


def dt_projection() -> dict[str, glue.PartitionProjectionConfiguration]:
    return {"dt": glue.PartitionProjectionConfiguration.date(
        min=PROJECTED_FIRST_DT, max=PROJECTED_LAST_DT, format=PROJECTED_DT_FORMAT,
        step=glue.DateProjectionStep(interval=1, interval_unit=glue.DateIntervalUnit.DAYS))}


def dt_location_template(table_uri: str) -> dict[str, str]:
    """Table parameters naming where a projected day lives (Athena's `${dt}` placeholder; the
    default would be the same Hive layout, stated so a change of layout shows here)."""
    return {"storage.location.template": f"{table_uri}dt=${{dt}}/"}


# The saved queries are written in the SQL that Athena's engine (Trino) and Spark SQL 3.5 both
# accept, and each is run by Spark SQL against the demo's lake (tests/e2e/test_saved_queries.py,
# tests/kit/athena_tables.py). Where the two dialects differ, the queries keep to the common part:
# - day arithmetic as `current_date - INTERVAL 'n' DAY` (a date in both), not Trino's
#   date_add('day', n, d) nor Spark's date_add(d, n);
# - `CAST(... AS varchar(10))` to compare with the string `dt` (Trino has no `string` type; Spark
#   accepts varchar(n) in a cast and reads it as string). The predicate stays `dt <op> <string>`,
#   which Athena turns into the list of projected days to read (partition pruning);
# - no quoted identifiers: Trino quotes with "..." (in Spark a string literal), Spark with `...`
#   (a syntax error in Trino). `index`, `timestamp`, `type`, `size`, `owner` are not reserved
#   words in either; `group` is reserved in both and no query names that column;
# - every ORDER BY ends in a unique key, so LIMIT keeps the same rows in both engines;
# - `100.0` is a decimal literal in both (Trino since 0.198), so small_pct is a decimal rounded
#   half up in both.
# What the test runner changes, and only that: `current_date` becomes the run's day as a DATE
# literal (the lake's data is from fixed days), and history-of-one-path's example path a path of
# the lake ("edit the path").
HISTORY_EXAMPLE_PATH = "/user/alice/data/part-0000"
DENIED_EXAMPLE_PATH = "/user/bob"
DELETED_EXAMPLE_PATH = "/data"
# Who made each event: the attribution row of its (cluster, txid, index), if any (a LEFT JOIN:
# an event whose user is not certain stays, with a null user).
_WHO = (f"LEFT JOIN {ATTRIBUTION_TABLE} a\n"
        f"  ON a.cluster = e.cluster AND a.txid = e.txid AND a.index = e.index\n")
_YESTERDAY = "CAST(current_date - INTERVAL '1' DAY AS varchar(10))"
_LAST_7_DAYS = "CAST(current_date - INTERVAL '7' DAY AS varchar(10))"
_LAST_30_DAYS = "CAST(current_date - INTERVAL '30' DAY AS varchar(10))"
NAMED_QUERIES: dict[str, tuple[str, str]] = {
    "mass-deletes-yesterday": (
        "Mass deletes detected yesterday (files and bytes removed, trash moves included), "
        "largest first",
        f"SELECT cluster, scope, subject, window_start, window_end, files_removed,\n"
        f"       bytes_removed, unlinks, trash_moves, root_path, user, unattributed_deletes,\n"
        f"       first_txid, last_txid\n"
        f"FROM {MASS_DELETES_TABLE}\nWHERE dt = {_YESTERDAY}\n"
        f"ORDER BY files_removed DESC, bytes_removed DESC, cluster, scope, subject,"
        f" window_start"),
    "top-writers-by-directory": (
        "Directories and owners that wrote the most bytes in the last 7 days",
        f"SELECT cluster, prefix, owner, sum(bytes_written) AS bytes_written,\n"
        f"       sum(files_created) AS files_created\nFROM {ACTIVITY_TABLE}\n"
        f"WHERE dt >= {_LAST_7_DAYS}\nGROUP BY cluster, prefix, owner\n"
        f"ORDER BY bytes_written DESC, cluster, prefix, owner\nLIMIT 50"),
    "small-files-report": (
        "Where small files are created (last 7 days): candidates for compaction upstream",
        f"SELECT cluster, prefix, sum(small_files_created) AS small_files,\n"
        f"       sum(files_created) AS files_created,\n"
        f"       round(100.0 * sum(small_files_created) / nullif(sum(files_created), 0), 1)"
        f" AS small_pct\nFROM {ACTIVITY_TABLE}\nWHERE dt >= {_LAST_7_DAYS}\n"
        f"GROUP BY cluster, prefix\nORDER BY small_files DESC, cluster, prefix\nLIMIT 50"),
    "inotify-gaps-last-30-days": (
        "Days whose activity figures miss purged edits (GAP records), most recent first",
        f"SELECT dt, cluster, gaps, lost_txids, first_lost_txid, last_lost_txid,\n"
        f"       snapshot_records\nFROM {GAPS_TABLE}\n"
        f"WHERE dt >= {_LAST_30_DAYS}\n"
        f"ORDER BY dt DESC, cluster"),
    "history-of-one-path": (
        "Every change of one path (edit the path), oldest first, with who made it",
        history_of_one_path(f"'{HISTORY_EXAMPLE_PATH}'")),
    "who-deleted-what-under-a-path": (
        "Deletes under one path (edit the path) in the last 7 days, moves into a trash "
        "included, with who made them",
        f"SELECT e.cluster, e.txid, e.index, e.type, e.path, e.dst_path, e.timestamp,\n"
        f"       a.user, a.real_user, a.client_ip\n"
        f"FROM {EVENTS_TABLE} e\n{_WHO}"
        f"WHERE e.dt >= {_LAST_7_DAYS}\n"
        f"  AND (e.type = 'UNLINK' OR (e.type = 'RENAME' AND e.dst_path LIKE '%/.Trash/%'))\n"
        f"  AND (e.path = '{DELETED_EXAMPLE_PATH}' OR e.path LIKE '{DELETED_EXAMPLE_PATH}/%')\n"
        f"ORDER BY e.cluster, e.txid, e.index"),
    "denied-accesses-under-a-path": (
        "Accesses the NameNode denied under one path (edit the path) in the last 7 days, by "
        "user and command",
        f"SELECT cluster, user, cmd, count(*) AS denials, count(DISTINCT src) AS paths,\n"
        f"       min(time) AS first_time, max(time) AS last_time\n"
        f"FROM {AUDIT_TABLE}\nWHERE dt >= {_LAST_7_DAYS} AND allowed = false\n"
        f"  AND (src = '{DENIED_EXAMPLE_PATH}' OR src LIKE '{DENIED_EXAMPLE_PATH}/%'\n"
        f"       OR dst = '{DENIED_EXAMPLE_PATH}' OR dst LIKE '{DENIED_EXAMPLE_PATH}/%')\n"
        f"GROUP BY cluster, user, cmd\nORDER BY denials DESC, cluster, user, cmd"),
}
