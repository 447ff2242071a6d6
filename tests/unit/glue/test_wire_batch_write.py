"""BatchWriteItem with a body already in wire JSON goes through botocore as any call
(glue_jobs/wire_batch_write.py): the bytes sent are the body, signed; a plain call on the same
client is untouched; unprocessed items come back as a body of their own. Nothing leaves the
process: botocore's `before-send` answers (the moto server round trip:
tests/integration/glue/test_image_index.py)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from glue_jobs.wire_batch_write import WireBody, accept_wire_bodies

ITEM = '{"parent":{"S":"c#/d"},"name":{"S":"é\\"q"},"size":{"NULL":true},"n":{"N":"1"}}'
UNPROCESSED = {"t": [{"PutRequest": {"Item": json.loads(ITEM)}}]}


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.status_code, self.headers, self.content = 200, {}, body

    def stream(self, **_: Any) -> Any:
        return iter([self.content])


@pytest.fixture
def sent() -> list[Any]:
    return []


@pytest.fixture
def ddb(sent: list[Any]) -> Any:
    client = accept_wire_bodies(boto3.client(
        "dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="k", aws_secret_access_key="s"))

    def answer(request: Any, **_: Any) -> AWSResponse:
        sent.append(request)
        reply = {"UnprocessedItems": UNPROCESSED if len(sent) == 1 else {}}
        return AWSResponse(request.url, 200, {}, _Raw(json.dumps(reply).encode()))
    client.meta.events.register("before-send.dynamodb.*", answer)
    return client


def test_the_body_sent_is_the_wire_body_signed(ddb, sent):
    body = WireBody.of_puts("t", ['{"PutRequest":{"Item":' + ITEM + "}}"])
    reply = ddb.batch_write_item(RequestItems=body)
    (request,) = sent
    assert request.body == bytes(body)
    assert json.loads(request.body) == {"RequestItems": UNPROCESSED}
    assert request.headers["X-Amz-Target"] == b"DynamoDB_20120810.BatchWriteItem"
    assert request.headers["Authorization"].startswith(b"AWS4-HMAC-SHA256")
    assert reply["UnprocessedItems"] == UNPROCESSED  # parsed as any reply
    again = WireBody.of_unprocessed(reply["UnprocessedItems"])
    assert json.loads(again) == {"RequestItems": UNPROCESSED}


def test_a_plain_call_on_the_same_client_is_serialized_by_botocore(ddb, sent):
    ddb.batch_write_item(RequestItems=UNPROCESSED)
    ddb.batch_write_item(RequestItems=UNPROCESSED)
    assert [json.loads(r.body) for r in sent] == [{"RequestItems": UNPROCESSED}] * 2
