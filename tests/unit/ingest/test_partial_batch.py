"""Transient AWS errors fail only the record (and, FIFO, the rest of its group); SQS redelivers
it, and the retry completes what the failure left."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from lambdas.ingest import handler
from tests.kit.ingest_aws import lake_events
from tests.kit.ingest_builders import two_groups_batch
from tests.kit.lambda_events import Context, event, record


def _ids(response) -> list[str]:
    return [f["itemIdentifier"] for f in response["batchItemFailures"]]


def _throttle_s3(dedup_id: str):
    def hook(params, **_):
        if dedup_id in params["Key"]:
            raise ClientError({"Error": {"Code": "SlowDown", "Message": "Reduce your rate"},
                               "ResponseMetadata": {"HTTPStatusCode": 503}}, "PutObject")
    return hook


@pytest.mark.parametrize("error", ["s3-503", "ddb-throttle", "connection"])
def test_transient_error_fails_its_record_and_the_rest_of_its_group(aws, error) -> None:
    a1, b1, a2 = two_groups_batch()
    consumer = handler.consumer()
    if error == "s3-503":
        consumer.lake.s3.meta.events.register("before-parameter-build.s3.PutObject",
                                              _throttle_s3(a1.dedup_id))
    elif error == "ddb-throttle":
        def hook(params, **_):  # the record's own write: its arrival for the index
            if params["Item"]["parent"]["S"] == f"prod!arrived#{a1.dedup_id}":
                raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException",
                                             "Message": "Rate exceeded"},
                                   "ResponseMetadata": {"HTTPStatusCode": 400}}, "PutItem")
        consumer.sequencer.store.ddb.meta.events.register(
            "before-parameter-build.dynamodb.PutItem", hook)
    else:
        def hook(params, **_):
            if a1.dedup_id in params["Key"]:
                raise EndpointConnectionError(endpoint_url="https://s3.eu-west-1.amazonaws.com")
        consumer.lake.s3.meta.events.register("before-parameter-build.s3.PutObject", hook)
    batch = event(a1, b1, a2)
    response = handler.handler(batch, Context())
    records = batch["Records"]
    assert _ids(response) == [records[0]["messageId"], records[2]["messageId"]]
    assert {e["txid"] for e in lake_events(aws)} >= {20, 21, 22}  # group /b went through
    # A2's writes ran beside A1's (consumer.storing_ahead): the retry writes them again.

    # SQS makes A1 and A2 visible again; the fault has passed.
    handler.consumer.cache_clear()
    retry = {"Records": [record(a1, receive_count=2), record(a2, receive_count=2)]}
    assert _ids(handler.handler(retry, Context())) == []
    txids = sorted(e["txid"] for e in lake_events(aws))
    assert txids == [10, 11, 12, 20, 21, 22, 30, 31, 32]  # each once


def test_a_handler_exception_is_not_swallowed_when_every_record_fails(aws) -> None:
    a1, _, a2 = two_groups_batch()
    handler.consumer().lake.s3.meta.events.register("before-parameter-build.s3.PutObject",
                                                    _throttle_s3(a1.dedup_id))
    # Powertools raises when the whole batch failed: Lambda then retries all of it.
    with pytest.raises(Exception, match="All records failed"):
        handler.handler(event(a1, a2), Context())
