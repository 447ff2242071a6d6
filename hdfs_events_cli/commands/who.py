"""`hdfs-events who PATH [--since DURATION|DATE] [--cluster C]`: who changed a path, from the
lake, asked of Athena as an operator would ask it in the console: the saved query
history-of-one-path (hdfs_events.lake_queries) in the stack's workgroup, the path, the day and
the cluster bound as execution parameters (a path is user input: it never enters the SQL text).

The workgroup comes from --workgroup or $ATHENA_WORKGROUP (the stack's AthenaWorkGroupName
output), the database from --database or $GLUE_DATABASE (its GlueDatabaseName output); AWS is
reached through the standard chain.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from botocore.config import Config

from hdfs_events.lake_queries import history_of_one_path

ENV_WORKGROUP = "ATHENA_WORKGROUP"
ENV_DATABASE = "GLUE_DATABASE"
DEFAULT_SINCE = "30d"
_DURATION = re.compile(r"([0-9]+)([mhdw])")
_UNIT = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1),
         "w": timedelta(weeks=1)}
# Athena answers a small query in about a second; polling faster only spends GetQueryExecution
# calls (its quota is per account), slower makes the operator wait.
_FIRST_POLL_S, _MAX_POLL_S = 0.25, 2.0
_DONE = ("SUCCEEDED", "FAILED", "CANCELLED")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="absolute HDFS path")
    parser.add_argument("--since", default=DEFAULT_SINCE,
                        help="a duration back from now (90m, 12h, 7d, 2w) or a UTC date or time "
                             f"(2026-11-20, 2026-11-20T08:30); default {DEFAULT_SINCE}")
    parser.add_argument("--cluster", help="only this cluster (default: every cluster)")
    parser.add_argument("--workgroup", default=os.environ.get(ENV_WORKGROUP),
                        help=f"Athena workgroup (default: ${ENV_WORKGROUP})")
    parser.add_argument("--database", default=os.environ.get(ENV_DATABASE),
                        help=f"Glue database of the lake (default: ${ENV_DATABASE})")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds to wait for the query (default 300)")


def parse_since(text: str, now: datetime) -> datetime:
    """A duration back from `now`, or an absolute UTC date/time; ValueError names the rule."""
    m = _DURATION.fullmatch(text.strip())
    if m:
        return now - int(m[1]) * _UNIT[m[2]]
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--since {text!r}: a duration (90m, 12h, 7d, 2w) or an ISO date or "
                         "time (2026-11-20, 2026-11-20T08:30) is needed") from None
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    if when > now:
        raise ValueError(f"--since {text!r}: is in the future")
    return when


def sql_string(value: str) -> str:
    """An execution parameter is an SQL literal: a string is quoted, its quotes doubled."""
    return "'" + value.replace("'", "''") + "'"


def run(args: argparse.Namespace) -> int:
    for flag, value, env in (("--workgroup", args.workgroup, ENV_WORKGROUP),
                             ("--database", args.database, ENV_DATABASE)):
        if not value:
            print(f"hdfs-events who: no {flag[2:]}: pass {flag} or set {env}", file=sys.stderr)
            return 2
    if not args.path.startswith("/"):
        print(f"hdfs-events who: path {args.path!r}: an absolute HDFS path is needed",
              file=sys.stderr)
        return 2
    try:
        since = parse_since(args.since, datetime.now(UTC))
    except ValueError as exc:
        print(f"hdfs-events who: {exc}", file=sys.stderr)
        return 2
    params = [sql_string(args.path), sql_string(args.path),
              sql_string(since.strftime("%Y-%m-%d")), str(int(since.timestamp() * 1000))]
    if args.cluster:
        params.append(sql_string(args.cluster))
    sql = history_of_one_path("?", since=("?", "?"), cluster="?" if args.cluster else None,
                              detail=True)
    athena = boto3.client("athena", config=Config(retries={"mode": "standard"}))
    query_id = athena.start_query_execution(
        QueryString=sql, WorkGroup=args.workgroup, ExecutionParameters=params,
        QueryExecutionContext={"Database": args.database})["QueryExecutionId"]
    status = _wait(athena, query_id, args.timeout)
    if status["State"] != "SUCCEEDED":
        reason = status.get("StateChangeReason", "(no reason given)")
        print(f"hdfs-events who: query {query_id} {status['State']}: {reason}", file=sys.stderr)
        return 1
    shown = 0
    for row in _rows(athena, query_id):
        print(_line(row, with_cluster=not args.cluster))
        shown += 1
    if not shown:
        print(f"no change of {args.path} since {since.strftime('%Y-%m-%d %H:%M:%SZ')}")
    return 0


def _wait(athena: Any, query_id: str, timeout: float) -> dict[str, Any]:
    deadline, pause = time.monotonic() + timeout, _FIRST_POLL_S
    while True:
        status: dict[str, Any] = athena.get_query_execution(
            QueryExecutionId=query_id)["QueryExecution"]["Status"]
        if status["State"] in _DONE:
            return status
        if time.monotonic() + pause > deadline:
            athena.stop_query_execution(QueryExecutionId=query_id)
            return {"State": "CANCELLED",
                    "StateChangeReason": f"still {status['State']} after {timeout:g} s"}
        time.sleep(pause)
        pause = min(pause * 2, _MAX_POLL_S)


def _rows(athena: Any, query_id: str) -> Iterator[dict[str, str | None]]:
    """The result rows by column name; Athena's first row of a SELECT is the header."""
    token: str | None = None
    names: list[str] = []
    while True:
        page = athena.get_query_results(QueryExecutionId=query_id,
                                        **({"NextToken": token} if token else {}))
        rows = page["ResultSet"]["Rows"]
        if not names:
            names = [c["Name"] for c in page["ResultSet"]["ResultSetMetadata"]["ColumnInfo"]]
            rows = rows[1:]
        for row in rows:
            yield {n: d.get("VarCharValue") for n, d in zip(names, row["Data"], strict=True)}
        token = page.get("NextToken")
        if not token:
            return


def _line(row: dict[str, str | None], *, with_cluster: bool) -> str:
    stamp = row["timestamp"]
    when = (datetime.fromtimestamp(int(stamp) / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
            if stamp else "(no time)")
    path = row["path"] if not row["dst_path"] else f"{row['path']} -> {row['dst_path']}"
    user = row["user"] or "(unknown)"
    if row["real_user"] and row["real_user"] != row["user"]:
        user += f" (via {row['real_user']})"
    fields = [when, f"{row['type']:<8}", path, user, row["auth"] or "-", row["client_ip"] or "-"]
    if with_cluster:
        fields.insert(1, f"[{row['cluster']}]")
    return "  ".join(fields)
