"""`hdfs-events drift receive --queue-url URL`: take the drift alerts `hdfs-events-agent verify`
sent (one message per drifting path, hdfs_events/drift_alert.py), print one line each (or the
JSON body with --json) and delete what was printed, until the queue has none left or --max were
taken. --keep prints without deleting (they come back after the queue's visibility timeout).

A body that is not a drift alert is reported on stderr with the field at fault and left on the
queue (exit 1). The queue is standard: a message can arrive twice, so the same path may be
printed twice; the run id tells one verify run from the next.

The queue URL is the Ingest stack's DriftAlertQueueUrl output; AWS access comes from the
standard chain (the operator-read policy grants receiving and deleting on that queue only).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hdfs_events.drift_alert import DriftAlertError, parse_alert

PROG = "hdfs-events drift"
# SQS limits: ReceiveMessage returns at most 10 messages; a long poll waits at most 20 s.
MAX_PER_RECEIVE = 10
MAX_WAIT_S = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    receive = sub.add_parser("receive", help="print and delete drift alerts")
    receive.add_argument("--queue-url", required=True,
                         help="the drift alert queue (output DriftAlertQueueUrl)")
    receive.add_argument("--max", type=int, default=1000, metavar="N",
                         help="stop after N messages (default: %(default)s)")
    receive.add_argument("--wait", type=int, default=2, metavar="SECONDS",
                         help=f"long poll of each receive, 0-{MAX_WAIT_S} (default: %(default)s)")
    receive.add_argument("--json", action="store_true", help="print each message's JSON body")
    receive.add_argument("--keep", action="store_true", help="print only, delete nothing")


def run(args: argparse.Namespace) -> int:
    if args.max < 1:
        print(f"{PROG} receive: --max: must be >= 1, got {args.max}", file=sys.stderr)
        return 2
    if not 0 <= args.wait <= MAX_WAIT_S:
        print(f"{PROG} receive: --wait: must be 0-{MAX_WAIT_S} (SQS's longest poll), got "
              f"{args.wait}", file=sys.stderr)
        return 2
    import boto3

    return receive(boto3.client("sqs"), args.queue_url, limit=args.max, wait_s=args.wait,
                   as_json=args.json, keep=args.keep)


def receive(sqs: Any, queue_url: str, *, limit: int, wait_s: int, as_json: bool = False,
            keep: bool = False, out: Any = None) -> int:
    out = out or sys.stdout
    taken, code = 0, 0
    while taken < limit:
        messages = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=min(MAX_PER_RECEIVE, limit - taken),
            WaitTimeSeconds=wait_s).get("Messages", [])
        if not messages:
            break
        taken += len(messages)
        shown = []
        for message in messages:
            try:
                alert = parse_alert(message["Body"])
            except DriftAlertError as exc:
                print(f"{PROG} receive: message {message['MessageId']} is not a drift alert "
                      f"(left on the queue): {exc}", file=sys.stderr)
                code = 1
                continue
            print(message["Body"] if as_json else alert.line(), file=out)
            shown.append(message)
        if shown and not keep:
            code = max(code, _delete(sqs, queue_url, shown))
    return code


def _delete(sqs: Any, queue_url: str, messages: list[dict[str, Any]]) -> int:
    response = sqs.delete_message_batch(QueueUrl=queue_url, Entries=[
        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)])
    for failed in response.get("Failed", ()):
        message = messages[int(failed["Id"])]
        print(f"{PROG} receive: message {message['MessageId']} printed but not deleted (it "
              f"will come back): {failed.get('Code')}: {failed.get('Message', '')}",
              file=sys.stderr)
    return 1 if response.get("Failed") else 0
