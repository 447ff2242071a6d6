"""Consumer Lambda for the FIFO event queue: parse, hand each message to the consumer, report.

Logger, Metrics, Tracer and the batch processor are module singletons. SqsFifoPartialProcessor
with skip_group_on_error: a failed message fails only the later messages of its own group
(they come back in order); other groups go on. Quarantined messages count as processed.
"""

from __future__ import annotations

import functools
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from hdfs_events import names
from lambdas.ingest import dal
from lambdas.ingest.consumer import MessageConsumer
from lambdas.ingest.index import NamespaceIndex
from lambdas.ingest.records import QueueMessage
from lambdas.ingest.settings import Settings

logger = Logger()
metrics = Metrics(namespace=names.METRICS_NAMESPACE)
tracer = Tracer()
processor = SqsFifoPartialProcessor(skip_group_on_error=True)


@functools.cache
def consumer() -> MessageConsumer:
    """Built on first use (not at import), from the environment, once per container."""
    settings = Settings.from_env()
    index = None
    if settings.index_enabled:
        assert settings.index_table is not None
        index = NamespaceIndex(dal.DynamoIndexStore(settings.index_table),
                               settings.index_prefixes)
    continuations = (dal.SqsContinuations(settings.event_queue_url)
                     if settings.event_queue_url else None)
    return MessageConsumer(lake=dal.S3Lake(settings.lake_bucket), index=index,
                           continuations=continuations, log_mode=settings.log_mode,
                           logger=logger)


@tracer.capture_method
def record_handler(record: SQSRecord) -> None:
    consumer().process(QueueMessage.from_lambda_record(record.raw_event))


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        return process_partial_response(event=event, record_handler=record_handler,
                                        processor=processor, context=context)
    finally:
        consumer().telemetry.emit(metrics)  # what succeeded is counted even if the batch fails
