"""`hdfs-events index ls /path`, `hdfs-events index stat /path`: read the namespace index;
`hdfs-events index status`: how far the consumer applied the cluster's txids, and what the
next range waits for (the index-stalled alarm's first command).

The table comes from --table or the INDEX_TABLE environment variable (the consumer's own
setting); AWS is reached through the standard chain.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from datetime import UTC, datetime

from hdfs_events import names
from hdfs_events_cli.index_reader import IndexEntry, IndexReader


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["ls", "stat", "status"])
    parser.add_argument("path", nargs="?", help="absolute HDFS path (ls, stat)")
    parser.add_argument("--cluster", required=True, help="cluster name, as the agent sends it")
    parser.add_argument("--table", default=os.environ.get(names.ENV_INDEX_TABLE),
                        help=f"index table (default: ${names.ENV_INDEX_TABLE})")
    parser.add_argument("--json", action="store_true", help="one JSON object per entry")
    parser.add_argument("--all", action="store_true", help="ls: include delete markers")


def run(args: argparse.Namespace) -> int:
    if not args.table:
        print(f"hdfs-events index: no table: pass --table or set {names.ENV_INDEX_TABLE}",
              file=sys.stderr)
        return 2
    if args.action == "status":
        return _status(args)
    if not args.path:
        print(f"hdfs-events index {args.action}: a path is needed", file=sys.stderr)
        return 2
    reader = IndexReader(args.table, args.cluster)
    try:
        if args.action == "stat":
            entry = reader.stat(args.path)
            if entry is None:
                print(f"stat: {args.path}: not in the index", file=sys.stderr)
                return 1
            entries = [entry]
        else:
            entries = reader.ls(args.path, include_deleted=args.all)
    except ValueError as exc:
        print(f"hdfs-events index: {exc}", file=sys.stderr)
        return 2
    for entry in entries:
        print(json.dumps(asdict(entry), sort_keys=True) if args.json else _line(entry))
    progress = {json.dumps(op, sort_keys=True) for e in entries for op in e.in_progress}
    for op in sorted(progress):
        print(f"note: subtree operation in progress: {op}", file=sys.stderr)
    if args.action == "stat" and entries[0].deleted:
        where = f" (moved to {entries[0].moved_to})" if entries[0].moved_to else ""
        print(f"note: {args.path} is deleted{where}", file=sys.stderr)
    return 0


def _status(args: argparse.Namespace) -> int:
    import time

    import boto3

    from hdfs_events_cli.index_status import describe, read_status

    status = read_status(boto3.client("dynamodb"), args.table, args.cluster)
    if args.json:
        print(json.dumps(asdict(status) | {"waiting": status.waiting}, sort_keys=True))
    else:
        print("\n".join(describe(status, int(time.time() * 1000))))
    return 0


def _line(e: IndexEntry) -> str:
    """Like `hdfs dfs -ls`: type+perms, replication, owner, group, size, mtime, path."""
    kind = {"DIRECTORY": "d", "SYMLINK": "l"}.get(e.type or "", "-")
    when = (datetime.fromtimestamp(e.mtime / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")
            if e.mtime is not None else "?")
    target = f" -> {e.symlink_target}" if e.symlink_target else ""
    deleted = "  [deleted]" if e.deleted else ""
    return (f"{kind}{e.perms or '????'} {e.replication if e.replication is not None else '-':>3} "
            f"{e.owner or '?'} {e.group or '?'} {e.size if e.size is not None else '?':>10} "
            f"{when} {e.path}{target}{deleted}")
