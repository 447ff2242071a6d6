"""The namespace inventory table (curated/namespace_inventory/): its columns, in one place for
the job (glue_jobs/namespace_inventory.py) and the catalog table the stack defines.

One row per path of the namespace at an fsimage's transaction id, root included, as
`hdfs oiv -p Delimited` lists them (the tests hold the job's rows to oiv's, field for field).
Partitioned by `cluster` and `image_date` (YYYY-MM-DD, UTC), both in the path, not in the files.

Words and units are the events table's (glue_jobs/schema.py), so the two join: `perms` is the
4-digit octal string the events carry (FsPermission with the sticky bit, "1777"), not oiv's
"drwxr-xr-x" (the type is its own column); `mtime` and `atime` are milliseconds since the
epoch (a directory has no atime: 0, as Hadoop stores it). Storage and erasure coding policies
are the ids the image stores: a policy's name is in sections the reader skips (a user-defined
erasure coding policy's only in ERASURE_CODING); `erasure_coding_policy_id` is null for a
replicated file and `replication` 0 for a striped one, as Hadoop stores them. Quotas are -1
when none is set (directories; 0 on files and symlinks).
"""

from __future__ import annotations

INVENTORY_TABLE = "namespace_inventory"

# (name, Hive type) of the columns stored in each Parquet file, in order.
INVENTORY_FILE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("path", "string"),
    ("type", "string"),  # FILE, DIRECTORY or SYMLINK
    ("size", "bigint"),  # the sum of the file's blocks' lengths
    ("owner", "string"),
    ("group", "string"),
    ("perms", "string"),
    ("mtime", "bigint"),
    ("atime", "bigint"),
    ("replication", "int"),
    ("blocks", "int"),
    ("preferred_block_size", "bigint"),
    ("storage_policy_id", "int"),  # 0: none set on the file itself (it inherits)
    ("erasure_coding_policy_id", "int"),
    ("ns_quota", "bigint"),
    ("ds_quota", "bigint"),
    ("symlink_target", "string"),
    ("under_construction", "boolean"),
    ("image_txid", "bigint"),  # NS_INFO's transaction id: the last one the image holds
)
INVENTORY_PARTITION_COLUMNS: tuple[tuple[str, str], ...] = (
    ("cluster", "string"), ("image_date", "string"))


def inventory_file_ddl() -> str:
    """The files' schema as Spark DDL (names quoted: `group` is a keyword)."""
    return ", ".join(f"`{name}` {kind}" for name, kind in INVENTORY_FILE_COLUMNS)
