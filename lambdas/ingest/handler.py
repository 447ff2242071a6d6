"""Consumer Lambda for the FIFO event queue: parse, hand each message to the consumer, report.

Logger, Metrics, Tracer and the batch processor are module singletons. SqsFifoPartialProcessor
with skip_group_on_error: a failed message fails only the later messages of its own group
(they come back in order); other groups go on. Quarantined messages count as processed.
The batch's event messages are written in parallel while the processor takes them one by one
(MessageConsumer.storing_ahead); all of them are done before the index applies ranges.
After the batch, the consumer finishes (MessageConsumer.finish): an invocation of the event
queue asks the apply queue to go on, one of the apply queue's continue requests applies the txid
ranges that became complete (the sequencer), with APPLY_MARGIN_MS of its time kept back. One
function, two event source mappings (stacks/ingest_function.py).

Invoked directly with a redrive request (hdfs_events.quarantine, `hdfs-events quarantine
redrive`), it reads the named quarantine records again instead (lambdas/ingest/redrive.py).
"""

from __future__ import annotations

import functools
import gc
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from hdfs_events import names
from hdfs_events.quarantine import is_redrive_request, redrive_keys
from lambdas.ingest.apply_queue import SqsContinueRequests
from lambdas.ingest.consumer import MessageConsumer
from lambdas.ingest.iam_users import IamUsers
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.index_table import DynamoIndexStore
from lambdas.ingest.lake_store import S3Lake
from lambdas.ingest.records import QueueMessage
from lambdas.ingest.redrive import QuarantineRedrive
from lambdas.ingest.senders import resolve_senders
from lambdas.ingest.sequence_store import DynamoSequenceStore
from lambdas.ingest.sequencer import IndexSequencer
from lambdas.ingest.settings import ConsumerSettings

# Kept back from applying ranges: a chunk of the index (CHUNK_EVENTS) that started just before the
# deadline must finish, and the metrics must still be published, before Lambda's timeout.
APPLY_MARGIN_MS = 10_000

logger = Logger()
metrics = Metrics(namespace=names.METRICS_NAMESPACE)
tracer = Tracer()
processor = SqsFifoPartialProcessor(skip_group_on_error=True)


@functools.cache
def consumer() -> MessageConsumer:
    """Built on first use (not at import), from the environment, once per container."""
    settings = ConsumerSettings.from_env()
    lake = S3Lake(settings.lake_bucket)
    continue_requests = (SqsContinueRequests(settings.apply_queue_url)
                         if settings.apply_queue_url else None)
    sequencer = None
    if settings.index_enabled:
        assert settings.index_table is not None
        index = NamespaceIndex(DynamoIndexStore(settings.index_table),
                               settings.index_prefixes)
        sequencer = IndexSequencer(DynamoSequenceStore(settings.index_table), index, lake)
    senders = resolve_senders(settings.cluster_senders, IamUsers().unique_id)
    built = MessageConsumer(lake=lake, sequencer=sequencer, continue_requests=continue_requests,
                            log_mode=settings.log_mode, logger=logger, senders=senders)
    # What the cold start made (modules, clients, models) lives as long as the container: kept
    # out of every later full collection of Python's garbage collector, each of which walks
    # all it tracks. At the NameNode's speed the lease holder stopped ~260 ms every ~3 s
    # before (100,000 held entries, index.HELD_ENTRIES_LIMIT, did the rest), ~40 ms after
    # (bench.chain_speed, docs/bench.md session 36).
    gc.freeze()
    return built


def quarantine_redrive() -> QuarantineRedrive:
    """Made per request (redrives are rare): it follows the consumer of the container."""
    return QuarantineRedrive(consumer=consumer(),
                             records=S3Lake(ConsumerSettings.from_env().lake_bucket),
                             logger=logger, clock_ms=consumer().clock_ms)


@tracer.capture_method
def record_handler(record: SQSRecord) -> None:
    consumer().process(QueueMessage.from_lambda_record(record.raw_event))


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        if is_redrive_request(event):
            results = quarantine_redrive().redrive(redrive_keys(event))
            response = {"redrive": [r.to_dict() for r in results]}
        else:
            messages = [QueueMessage.from_lambda_record(r) for r in event.get("Records", [])]
            with consumer().storing_ahead(messages):
                response = process_partial_response(event=event, record_handler=record_handler,
                                                    processor=processor, context=context)
        remaining = context.get_remaining_time_in_millis() - APPLY_MARGIN_MS
        consumer().finish(consumer().clock_ms() + max(0, remaining))
        return response
    finally:
        consumer().telemetry.emit(metrics)  # what succeeded is counted even if the batch fails
