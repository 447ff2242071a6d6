"""What the Glue Data Catalog says about the lake: table layouts and the Athena named queries.

The curated events table has one column per field of the contract (hdfs_events.event.FIELDS),
`cluster` and `dt` being partition keys; a field added to the contract without a type here
stops the synth, so catalog and contract cannot drift apart silently.
"""

from __future__ import annotations

from aws_cdk import aws_glue as glue

from hdfs_events.event import FIELDS
from hdfs_events.names import CURATED_PREFIX

EVENTS_TABLE = "events"
ACTIVITY_TABLE = "activity_daily"
MASS_DELETES_TABLE = "mass_deletes"
GAPS_TABLE = "gaps_daily"
# The layout of glue_jobs/layout.py: curated/<table>/, raw/ and quarantine/glue/.
CURATED_EVENTS = f"{CURATED_PREFIX}{EVENTS_TABLE}/"
CURATED_ACTIVITY = f"{CURATED_PREFIX}{ACTIVITY_TABLE}/"
CURATED_MASS_DELETES = f"{CURATED_PREFIX}{MASS_DELETES_TABLE}/"
CURATED_GAPS = f"{CURATED_PREFIX}{GAPS_TABLE}/"

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


def _columns(*spec: tuple[str, glue.Type]) -> list[glue.Column]:
    return [glue.Column(name=n, type=t) for n, t in spec]


# Rollup columns as glue_jobs/rollups.py writes them (ACTIVITY_COLUMNS, MASS_DELETE_COLUMNS).
def activity_columns() -> list[glue.Column]:
    s = glue.Schema
    return _columns(("cluster", s.STRING), ("prefix", s.STRING), ("owner", s.STRING),
                    ("files_created", s.BIG_INT), ("files_deleted", s.BIG_INT),
                    ("files_renamed", s.BIG_INT), ("bytes_written", s.BIG_INT),
                    ("small_files_created", s.BIG_INT), ("net_file_count_change", s.BIG_INT))


def mass_delete_columns() -> list[glue.Column]:
    s = glue.Schema
    return _columns(("cluster", s.STRING), ("scope", s.STRING), ("subject", s.STRING),
                    ("window_start", s.TIMESTAMP), ("window_end", s.TIMESTAMP),
                    ("unlinks", s.BIG_INT), ("first_txid", s.BIG_INT), ("last_txid", s.BIG_INT))


def gap_columns() -> list[glue.Column]:
    s = glue.Schema
    return _columns(("cluster", s.STRING), ("gaps", s.BIG_INT), ("lost_txids", s.BIG_INT),
                    ("first_lost_txid", s.BIG_INT), ("last_lost_txid", s.BIG_INT),
                    ("snapshot_records", s.BIG_INT))


def dt_partition() -> list[glue.Column]:
    return [glue.Column(name="dt", type=glue.Schema.STRING, comment="YYYY-MM-DD (UTC)")]


_YESTERDAY = "cast(date_add('day', -1, current_date) AS varchar)"
_LAST_7_DAYS = "cast(date_add('day', -7, current_date) AS varchar)"
NAMED_QUERIES: dict[str, tuple[str, str]] = {
    "mass-deletes-yesterday": (
        "Mass deletes detected yesterday, largest first",
        f"SELECT cluster, scope, subject, window_start, window_end, unlinks,\n"
        f"       first_txid, last_txid\n"
        f"FROM {MASS_DELETES_TABLE}\nWHERE dt = {_YESTERDAY}\nORDER BY unlinks DESC"),
    "top-writers-by-directory": (
        "Directories and owners that wrote the most bytes in the last 7 days",
        f"SELECT cluster, prefix, owner, sum(bytes_written) AS bytes_written,\n"
        f"       sum(files_created) AS files_created\nFROM {ACTIVITY_TABLE}\n"
        f"WHERE dt >= {_LAST_7_DAYS}\nGROUP BY cluster, prefix, owner\n"
        f"ORDER BY bytes_written DESC\nLIMIT 50"),
    "small-files-report": (
        "Where small files are created (last 7 days): candidates for compaction upstream",
        f"SELECT cluster, prefix, sum(small_files_created) AS small_files,\n"
        f"       sum(files_created) AS files_created,\n"
        f"       round(100.0 * sum(small_files_created) / nullif(sum(files_created), 0), 1)"
        f" AS small_pct\nFROM {ACTIVITY_TABLE}\nWHERE dt >= {_LAST_7_DAYS}\n"
        f"GROUP BY cluster, prefix\nORDER BY small_files DESC\nLIMIT 50"),
    "inotify-gaps-last-30-days": (
        "Days whose activity figures miss purged edits (GAP records), most recent first",
        f"SELECT dt, cluster, gaps, lost_txids, first_lost_txid, last_lost_txid,\n"
        f"       snapshot_records\nFROM {GAPS_TABLE}\n"
        f"WHERE dt >= cast(date_add('day', -30, current_date) AS varchar)\n"
        f"ORDER BY dt DESC, cluster"),
    "history-of-one-path": (
        "Every change of one path (edit the path), oldest first",
        f"SELECT cluster, txid, \"index\", type, path, dst_path, timestamp, size, owner, perms\n"
        f"FROM {EVENTS_TABLE}\nWHERE path = '/user/alice/data/part-0000'"
        f" OR dst_path = '/user/alice/data/part-0000'\nORDER BY cluster, txid, \"index\""),
}
