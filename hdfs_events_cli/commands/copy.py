"""`hdfs-events copy submit ...` and `hdfs-events copy status REQUEST_ID`.

submit validates a copy request exactly as the worker will (hdfs_events.copy_request), records
it as `requested` in the transfers table when one is named (under "<cluster>#<request_id>", the
item the cluster's worker will move on), and sends it to that cluster's copy-request
queue (standard, as the CDK app makes it, or FIFO: then group = destination, so requests for one
directory run one after another, and dedup id = request_id). status reads the request's item
from the transfers table.

Queue URL and table name are flags (the CDK app prints both as outputs, a queue per cluster:
CopyRequestQueueUrl<Cluster>); AWS access comes from the standard chain.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from hdfs_events import names, transfer_item
from hdfs_events.copy_request import (
    MAX_COPY_LISTING_ENTRIES,
    CopyMode,
    CopyRequest,
    CopyRequestError,
    TransferState,
    decode_request,
    make_request,
    parse_s3_uri,
)
from hdfs_events.dynamodb_json import from_wire, to_wire

PROG = "hdfs-events copy"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    submit = sub.add_parser("submit", help="validate and send one copy request")
    submit.add_argument("--queue-url", required=True,
                        help="the copy-request queue of the destination's cluster")
    submit.add_argument("--cluster", help="the destination's cluster (with --transfers-table)")
    submit.add_argument("--transfers-table", metavar="TABLE",
                        help="record the request as `requested` in this table first")
    submit.add_argument("--request", metavar="FILE",
                        help="a whole request as JSON ('-' for stdin) instead of the flags below")
    submit.add_argument("--request-id", help="unique id (default: copy-<UTC time>-<random>)")
    submit.add_argument("--source", metavar="S3_URI", help="s3://bucket/prefix/ to copy")
    submit.add_argument("--destination", metavar="HDFS_PATH", help="absolute HDFS directory")
    submit.add_argument("--mode", default=CopyMode.UPDATE.value,
                        choices=[m.value for m in CopyMode],
                        help="overwrite | update | skip-existing (default: %(default)s)")
    listing = submit.add_mutually_exclusive_group()
    listing.add_argument("--listing", metavar="FILE",
                         help='the copy listing: a JSON list of {"key": ..., "size": ...} '
                              "(full S3 keys)")
    listing.add_argument("--listing-from-source", action="store_true",
                         help="list the source now and send that as the copy listing "
                              "(otherwise the source must hold a _SUCCESS marker)")
    # The old names (CHANGELOG.md), hidden: operators' scripts keep working across the upgrade.
    listing.add_argument("--manifest", dest="listing", action=_RenamedOption,
                         new_name="--listing")
    listing.add_argument("--manifest-from-listing", dest="listing_from_source", nargs=0,
                         const=True, default=False, action=_RenamedOption,
                         new_name="--listing-from-source")
    submit.add_argument("--notify", metavar="SNS_TOPIC_ARN",
                        help="also notify this topic (must be allowed by the worker)")
    submit.add_argument("--retention-days", type=int, default=90,
                        help="how long the transfers item lives (default: %(default)s)")
    submit.add_argument("--dry-run", action="store_true",
                        help="validate and print the request; send nothing")

    status = sub.add_parser("status", help="show a request's state from the transfers table")
    status.add_argument("request_id")
    status.add_argument("--cluster", required=True, help="the cluster that copies it")
    status.add_argument("--transfers-table", required=True, metavar="TABLE")
    status.add_argument("--json", action="store_true", help="print the item as JSON")


class _RenamedOption(argparse.Action):
    """An option's old name: not in --help, it sets what the new name sets and says once on
    stderr which name to use instead."""

    def __init__(self, option_strings: list[str], dest: str, *, new_name: str,
                 **kwargs: Any) -> None:
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)
        self.new_name = new_name

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(f"{parser.prog}: {option_string} is deprecated, use {self.new_name}",
              file=sys.stderr)
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


def run(args: argparse.Namespace) -> int:
    if args.action == "submit":
        return _submit(args)
    return _status(args)


def _submit(args: argparse.Namespace) -> int:
    try:
        request = _build_request(args)
    except CopyRequestError as exc:
        print(f"{PROG} submit: invalid request: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"{PROG} submit: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(request.to_json())
        return 0
    if args.transfers_table and not args.cluster:
        print(f"{PROG} submit: --transfers-table needs --cluster (items are per cluster)",
              file=sys.stderr)
        return 2
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        if args.transfers_table:
            state = _record_requested(boto3.client("dynamodb"), args.transfers_table,
                                      args.cluster, request, args.retention_days)
            if state in (TransferState.VERIFIED, TransferState.REJECTED):
                print(f"{PROG} submit: {request.request_id} is already {state}; not sent "
                      "(use a new --request-id to copy again)", file=sys.stderr)
                return 1 if state == TransferState.REJECTED else 0
        response = boto3.client("sqs").send_message(**send_message_args(args.queue_url,
                                                                       request))
    except _RequestIdTaken as exc:
        print(f"{PROG} submit: {exc}", file=sys.stderr)
        return 1
    except (BotoCoreError, ClientError) as exc:
        print(f"{PROG} submit: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"request_id": request.request_id, "message_id": response["MessageId"],
                      "source": request.source.uri, "destination": request.destination,
                      "mode": str(request.mode)}))
    return 0


def send_message_args(queue_url: str, request: CopyRequest) -> dict[str, str]:
    """SendMessage arguments for a standard or a FIFO queue (".fifo" names, as SQS requires):
    only FIFO queues take a group (one destination at a time) and a deduplication id; on a
    standard queue the transfers table alone makes a duplicate delivery harmless."""
    kwargs = {"QueueUrl": queue_url, "MessageBody": request.to_json()}
    if queue_url.rstrip("/").endswith(".fifo"):
        kwargs.update(MessageGroupId=request.message_group_id,
                      MessageDeduplicationId=request.deduplication_id)
    return kwargs


def _build_request(args: argparse.Namespace) -> CopyRequest:
    if args.request:
        if args.source or args.destination or args.listing or args.listing_from_source:
            raise ValueError("--request takes the whole request; drop the other request flags")
        text = sys.stdin.read() if args.request == "-" else Path(args.request).read_text("utf-8")
        return decode_request(text)
    if not args.source or not args.destination:
        raise ValueError("--source and --destination are required (or --request FILE)")
    copy_listing = None
    if args.listing:
        copy_listing = json.loads(Path(args.listing).read_text("utf-8"))
        if not isinstance(copy_listing, list):
            # "manifest": the request field the copy listing travels in (hdfs_events.copy_request)
            raise CopyRequestError("manifest", "the file must hold a JSON list")
    elif args.listing_from_source:
        copy_listing = _source_listing(args.source)
    request_id = args.request_id or (
        f"copy-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(4)}")
    return make_request(request_id=request_id, source=args.source,
                        destination=args.destination, mode=args.mode, copy_listing=copy_listing,
                        notify=args.notify)


def _source_listing(source: str) -> list[dict[str, Any]]:
    import boto3

    location = parse_s3_uri(source)
    entries: list[dict[str, Any]] = []
    pages = boto3.client("s3").get_paginator("list_objects_v2").paginate(
        Bucket=location.bucket, Prefix=location.prefix)
    for page in pages:
        for obj in page.get("Contents", ()):
            if not obj["Key"].endswith("/"):
                entries.append({"key": obj["Key"], "size": int(obj["Size"])})
            if len(entries) > MAX_COPY_LISTING_ENTRIES:
                raise CopyRequestError("manifest", f"more than {MAX_COPY_LISTING_ENTRIES} objects "
                                                   f"under {location.uri}")
    if not entries:
        raise CopyRequestError("source", f"no objects under {location.uri}")
    return entries


class _RequestIdTaken(Exception):
    pass


def _record_requested(ddb: Any, table: str, cluster: str, request: CopyRequest,
                      retention_days: int) -> TransferState:
    """Puts the `requested` item unless one exists; returns the state the item is in."""
    item = transfer_item.requested(cluster, request, time.time(), retention_days)
    try:
        ddb.put_item(TableName=table, Item=to_wire(item),
                     ConditionExpression="attribute_not_exists(#pk)",
                     ExpressionAttributeNames={"#pk": names.TRANSFERS_PK})
        return TransferState.REQUESTED
    except ddb.exceptions.ConditionalCheckFailedException:
        pass
    existing = from_wire(ddb.get_item(
        TableName=table, ConsistentRead=True,
        Key=to_wire(transfer_item.item_key(cluster, request.request_id))).get("Item", {}))
    if existing.get(transfer_item.FINGERPRINT) != request.fingerprint:
        raise _RequestIdTaken(f"request_id {request.request_id!r} is already used for a "
                              "different request")
    return TransferState(existing[transfer_item.STATE])


def _status(args: argparse.Namespace) -> int:
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        raw = boto3.client("dynamodb").get_item(
            TableName=args.transfers_table, ConsistentRead=True,
            Key=to_wire(transfer_item.item_key(args.cluster, args.request_id))).get("Item")
    except (BotoCoreError, ClientError) as exc:
        print(f"{PROG} status: {exc}", file=sys.stderr)
        return 1
    if raw is None:
        print(f"{PROG} status: no request {args.request_id!r} of cluster {args.cluster!r} in "
              f"{args.transfers_table}",
              file=sys.stderr)
        return 1
    item = _plain(from_wire(raw))
    if args.json:
        print(json.dumps(item, ensure_ascii=False, sort_keys=True))
        return 0
    for key in transfer_item.STATUS_FIELDS:
        if key in item:
            print(f"{key:12} {item[key]}")
    for entry in item.get(transfer_item.HISTORY, ()):
        attempt = entry.get(transfer_item.ATTEMPT)
        extra = f" attempt {attempt}" if attempt is not None else ""
        reason = f": {entry[transfer_item.REASON]}" if entry.get(transfer_item.REASON) else ""
        print(f"  {entry.get(transfer_item.AT, '?')}  {entry.get(transfer_item.STATE)}{extra}"
              f"{reason}")
    return 0


def _plain(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal; whole ones print as int."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
