"""The consumer Lambda as the local chain runs it (tests/kit/local_chain.py): a process of its
own whose stdout is the function's CloudWatch log stream, fed by the local SQS event source
mapping (tests/kit/sqs_lambda.py).

    python -m tests.kit.lambda_process EVENT_QUEUE_URL APPLY_QUEUE_URL --stop-file F --stats F \
        [--fail-share 0.2]

Runs until the stop file exists and the queue has been idle for a few polls, then writes its
counters and the send-to-lake latency of every record (ms from SQS SentTimestamp to the end of
the successful invocation) as JSON.

`--fail-share` injects transient faults the way S3 shows them (503 SlowDown on PutObject) for a
share of messages on their first receive only, through a botocore hook on the default session:
the handler's real transient-error path fails those records and SQS redelivers them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import boto3
from botocore.awsrequest import AWSResponse

from hdfs_events.lake_layout import RAW_PREFIX
from tests.kit.sqs_lambda import LocalSqsLambdaRunner, load_handler


class FirstReceiveFaults:
    """Fails PutObject for a deterministic share of raw-lake keys the first time each is seen."""

    def __init__(self, share: float) -> None:
        self.share, self.seen, self.injected = share, set[str](), 0

    def __call__(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict] | None:
        # before-call sees the serialised request: the object key is in the URL path.
        key = unquote(str(params.get("url_path", "")))
        if RAW_PREFIX not in key or key in self.seen:
            return None
        self.seen.add(key)
        bucket = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        if bucket >= self.share:
            return None
        self.injected += 1
        response = AWSResponse("http://injected", 503, {}, None)
        parsed = {"Error": {"Code": "SlowDown", "Message": "injected by the demo"},
                  "ResponseMetadata": {"HTTPStatusCode": 503}}
        return response, parsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("queue_urls", nargs="+", metavar="queue_url",
                        help="the event queue, then the apply queue: the function's mappings")
    parser.add_argument("--stop-file", type=Path, required=True)
    parser.add_argument("--stats", type=Path, required=True)
    parser.add_argument("--fail-share", type=float, default=0.0)
    parser.add_argument("--idle-polls", type=int, default=3)
    parser.add_argument("--visibility-timeout", type=int, default=5,
                        help="seconds a received message stays invisible (a failed one waits "
                             "this long before SQS delivers it again)")
    args = parser.parse_args(argv)

    faults = FirstReceiveFaults(args.fail_share)
    if args.fail_share > 0:
        # The handler's clients come from boto3's default session: hook it before they exist.
        boto3.setup_default_session()
        boto3.DEFAULT_SESSION.events.register("before-call.s3.PutObject", faults)
    real_handler = load_handler("lambdas.ingest.handler:handler")
    latencies: list[float] = []

    def timed_handler(event: dict[str, Any], context: Any) -> Any:
        response = real_handler(event, context)
        done = time.time() * 1000
        failed = {f["itemIdentifier"] for f in (response or {}).get("batchItemFailures", [])}
        for record in event["Records"]:
            # Only the event queue's: the apply queue's requests are the consumer's own.
            if (record["messageId"] not in failed
                    and record["eventSourceARN"] == runner.queue_arns[runner.queue_url]):
                latencies.append(done - int(record["attributes"]["SentTimestamp"]))
        return response

    runner = LocalSqsLambdaRunner(args.queue_urls, timed_handler,
                                  visibility_timeout=args.visibility_timeout)
    idle = 0
    while True:
        idle = idle + 1 if runner.poll_once() == 0 else 0
        # Failed records are in flight (invisible) until their visibility timeout ends: an empty
        # receive does not mean done; only a queue with nothing visible or in flight does.
        if args.stop_file.exists() and idle >= args.idle_polls and runner.depth() == 0:
            break
    args.stats.write_text(json.dumps({
        "invocations": runner.invocations, "records": runner.records,
        "failures": runner.failures, "batch_errors": runner.batch_errors,
        "injected_faults": faults.injected, "latency_ms": latencies,
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
