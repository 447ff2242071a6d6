"""`hdfs-events quarantine redrive`: read quarantined messages again after a fix.

Lists the consumer's quarantine records (hdfs_events.quarantine) in the lake bucket, keeps those
the filters select, and asks the consumer function to redrive them (lambda:InvokeFunction,
synchronous, MAX_REDRIVE_KEYS records a request). The consumer reads each record from its own
bucket and runs the message through its own checks, the sender's among them: this command sends
keys, never bodies, so it cannot make the consumer accept what SQS did not deliver. `--dry-run`
prints what would be redriven and invokes nothing.

Exit codes: 0 when every selected record was taken (or none was selected), 1 when one is still
refused, busy or gone, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from hdfs_events import names
from hdfs_events.quarantine import (
    ENV_CONSUMER_FUNCTION,
    INGEST_PREFIX,
    MAX_REDRIVE_KEYS,
    RedriveRequestError,
    RedriveResult,
    ingest_day_prefix,
    key_date,
    record_cluster,
    redrive_request,
    redrive_results,
)

PROG = "hdfs-events quarantine"
REASON_CHARS = 160  # of a reason printed per record: the record holds it whole


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    redrive = sub.add_parser("redrive", help="reprocess quarantined messages through the "
                             "consumer (after the fix that makes them readable)")
    redrive.add_argument("--bucket", default=os.environ.get(names.ENV_LAKE_BUCKET),
                         help=f"the lake bucket (default: ${names.ENV_LAKE_BUCKET})")
    redrive.add_argument("--function", default=os.environ.get(ENV_CONSUMER_FUNCTION),
                         help="the consumer function's name or ARN, output IngestFunctionName "
                              f"(default: ${ENV_CONSUMER_FUNCTION})")
    redrive.add_argument("--cluster", help="only messages of this cluster's message groups")
    redrive.add_argument("--since", type=_date, metavar="YYYY-MM-DD",
                         help="only messages sent on or after this UTC date")
    redrive.add_argument("--reason-contains", metavar="TEXT",
                         help="only messages whose quarantine reason contains TEXT")
    redrive.add_argument("--dry-run", action="store_true",
                         help="print what would be redriven; invoke nothing")
    redrive.add_argument("--batch", type=int, default=MAX_REDRIVE_KEYS,
                         help="records per request, 1 to %(default)s")


def _date(text: str) -> str:
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"--since must be a date YYYY-MM-DD, got {text!r}") from exc


@dataclass(frozen=True, slots=True)
class Selection:
    cluster: str | None = None
    since: str | None = None  # YYYY-MM-DD
    reason_contains: str | None = None

    def wants_key(self, key: str) -> bool:
        day = key_date(key)
        return day is not None and (self.since is None or day >= self.since)

    def wants(self, key: str, record: Any) -> bool:
        if not self.wants_key(key) or not isinstance(record, dict):
            return False
        if self.cluster is not None and record_cluster(record) != self.cluster:
            return False
        reason = record.get("reason")
        return self.reason_contains is None or (
            isinstance(reason, str) and self.reason_contains in reason)


def selected_records(s3: Any, bucket: str, selection: Selection
                     ) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key, record) of each quarantine record the selection wants, oldest day first."""
    # StartAfter a day's own prefix: its records sort after it, the days before ahead of it.
    start = {"StartAfter": ingest_day_prefix(selection.since)} if selection.since else {}
    for page in s3.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=INGEST_PREFIX, **start):
        for obj in page.get("Contents", []):
            key = obj["Key"]
            if not selection.wants_key(key):
                continue
            record = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
            if selection.wants(key, record):
                yield key, record


def run(args: argparse.Namespace) -> int:
    if not args.bucket:
        return _usage(f"no bucket: pass --bucket or set {names.ENV_LAKE_BUCKET}")
    if not args.dry_run and not args.function:
        return _usage(f"no function: pass --function or set {ENV_CONSUMER_FUNCTION}")
    if not 0 < args.batch <= MAX_REDRIVE_KEYS:
        return _usage(f"--batch must be 1 to {MAX_REDRIVE_KEYS}, got {args.batch}")
    import boto3

    selection = Selection(args.cluster, args.since, args.reason_contains)
    chosen = list(selected_records(boto3.client("s3"), args.bucket, selection))
    for key, record in chosen:
        reason = str(record.get("reason", ""))[:REASON_CHARS]
        print(f"{'would redrive' if args.dry_run else 'redrive'} {key} "
              f"cluster={record_cluster(record) or '?'} reason={reason}")
    if args.dry_run or not chosen:
        print(f"{len(chosen)} quarantined message(s) selected", file=sys.stderr)
        return 0
    results = redrive(boto3.client("lambda"), args.function, [k for k, _ in chosen],
                      batch=args.batch)
    return report(results)


def redrive(lambda_client: Any, function: str, keys: Sequence[str], *,
            batch: int = MAX_REDRIVE_KEYS) -> list[RedriveResult]:
    """The consumer's result for each key, `batch` keys a synchronous invocation. A failed
    invocation raises: the records it took are out of the quarantine, the rest are still
    there, and running the command again goes on from there."""
    results: list[RedriveResult] = []
    for i in range(0, len(keys), batch):
        response = lambda_client.invoke(
            FunctionName=function, InvocationType="RequestResponse",
            Payload=json.dumps(redrive_request(keys[i:i + batch])).encode("utf-8"))
        payload = json.loads(response["Payload"].read() or b"null")
        if response.get("FunctionError"):
            raise RedriveRequestError(f"the consumer failed the redrive request: "
                                      f"{json.dumps(payload)[:2000]}")
        results += redrive_results(payload)
    return results


def report(results: Sequence[RedriveResult]) -> int:
    for r in results:
        detail = f" index={r.index}" if r.index else ""
        detail += f" reason={r.reason[:REASON_CHARS]}" if r.reason else ""
        print(f"{r.outcome} {r.key}{detail}")
    counts = Counter(r.outcome for r in results)
    print(", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())), file=sys.stderr)
    passed = sum(r.index == "passed" for r in results)
    if passed:
        print(f"{passed} message(s) hold events the index had already passed: they are in the "
              "lake, not in the index; run `hdfs-events-agent verify` to repair it",
              file=sys.stderr)
    return 0 if counts.keys() <= {"ingested"} else 1


def _usage(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2
