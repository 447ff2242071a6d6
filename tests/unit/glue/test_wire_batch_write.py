"""BatchWriteItem with a body already in wire JSON, the request prepared once
(glue_jobs/wire_batch_write.py): preparing sends nothing; each request sent is the body, signed
by SigV4 over that body, with the headers botocore's own call sends; botocore retries a
throttled call with the same body; the service's errors are the client's exceptions; unprocessed
items come back parsed and become a body of their own. Nothing leaves the process: botocore's
`before-send` answers (the moto server round trip: tests/integration/glue/test_image_index.py)."""

from __future__ import annotations

import json
import re
from typing import Any

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest, AWSResponse
from botocore.credentials import Credentials

from glue_jobs.wire_batch_write import BatchWriteCalls, WireBody

ITEM = '{"parent":{"S":"c#/d"},"name":{"S":"é\\"q"},"size":{"NULL":true},"n":{"N":"1"}}'
UNPROCESSED = {"t": [{"PutRequest": {"Item": json.loads(ITEM)}}]}
BODY = WireBody.of_requests("t", ['{"PutRequest":{"Item":' + ITEM + "}}"])
KEY, SECRET = "k", "s"
# Headers that differ between any two requests (the time, its signature, the call's own id) or
# with the body's spelling (botocore's own serializer spaces its JSON).
PER_REQUEST = {"Authorization", "X-Amz-Date", "amz-sdk-invocation-id", "amz-sdk-request",
               "Content-Length"}

Reply = tuple[int, dict[str, Any]]


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.status_code, self.headers, self.content = 200, {}, body

    def stream(self, **_: Any) -> Any:
        return iter([self.content])


@pytest.fixture
def sent() -> list[Any]:
    return []


@pytest.fixture
def replies() -> list[Reply]:
    """What the double answers, one a request; then an empty success."""
    return []


@pytest.fixture
def ddb(sent: list[Any], replies: list[Reply]) -> Any:
    client = boto3.client("dynamodb", region_name="us-east-1",
                          endpoint_url="http://127.0.0.1:9", aws_access_key_id=KEY,
                          aws_secret_access_key=SECRET,
                          config=boto3.session.Config(retries={"mode": "standard",
                                                               "max_attempts": 3}))

    def answer(request: Any, **_: Any) -> AWSResponse:
        sent.append(request)
        status, reply = replies.pop(0) if replies else (200, {})
        return AWSResponse(request.url, status, {}, _Raw(json.dumps(reply).encode()))
    client.meta.events.register("before-send.dynamodb.*", answer)
    return client


def signature_of(request: Any) -> str:
    """SigV4 of the request as sent (its body, the headers it names as signed, its time),
    computed afresh."""
    signed = re.search(r"SignedHeaders=([^,]+)",
                       request.headers["Authorization"].decode()).group(1).split(";")
    unsigned = AWSRequest(method=request.method, url=request.url, data=request.body,
                          headers={k: v.decode() if isinstance(v, bytes) else v
                                   for k, v in request.headers.items() if k.lower() in signed})
    unsigned.context["timestamp"] = request.headers["X-Amz-Date"].decode()
    auth = SigV4Auth(Credentials(KEY, SECRET), "dynamodb", "us-east-1")
    return auth.signature(auth.string_to_sign(unsigned, auth.canonical_request(unsigned)),
                          unsigned)


def headers_of(request: Any) -> dict[str, bytes]:
    return {k: v for k, v in request.headers.items() if k not in PER_REQUEST}


def test_preparing_sends_nothing_and_each_body_goes_out_signed_over_itself(ddb, sent):
    calls = BatchWriteCalls(ddb, "t")
    assert sent == []
    other = WireBody.of_requests("t", ['{"PutRequest":{"Item":{"k":{"S":"other"}}}}'])
    assert calls.send(BODY)["ResponseMetadata"]["RetryAttempts"] == 0
    calls.send(other)
    assert [r.body for r in sent] == [bytes(BODY), bytes(other)]
    for request in sent:
        assert request.headers["Authorization"].decode().endswith(
            "Signature=" + signature_of(request))


def test_the_request_is_the_one_botocores_own_call_sends(ddb, sent):
    BatchWriteCalls(ddb, "t").send(BODY)
    ddb.batch_write_item(RequestItems=UNPROCESSED)
    prepared, own = sent
    assert json.loads(prepared.body) == json.loads(own.body)
    assert (prepared.method, prepared.url, headers_of(prepared)) == \
        (own.method, own.url, headers_of(own))


def test_a_throttled_call_is_retried_by_botocore_with_the_same_body(ddb, sent, replies):
    replies.append((400, {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
                          "message": "slow down"}))
    reply = BatchWriteCalls(ddb, "t").send(BODY)
    assert [r.body for r in sent] == [bytes(BODY)] * 2
    assert sent[1].headers["amz-sdk-request"].startswith(b"attempt=2;")
    assert sent[1].headers["Authorization"].decode().endswith(
        "Signature=" + signature_of(sent[1]))  # signed again
    assert reply["ResponseMetadata"]["RetryAttempts"] == 1


def test_a_service_error_is_the_clients_exception(ddb, replies):
    replies.append((400, {"__type": "com.amazonaws.dynamodb.v20120810#"
                                    "ResourceNotFoundException", "message": "no table t"}))
    with pytest.raises(ddb.exceptions.ResourceNotFoundException, match="no table t"):
        BatchWriteCalls(ddb, "t").send(BODY)


def test_unprocessed_items_are_parsed_and_become_a_body_again(ddb, sent, replies):
    replies.append((200, {"UnprocessedItems": UNPROCESSED}))
    calls = BatchWriteCalls(ddb, "t")
    left = calls.send(BODY)["UnprocessedItems"]
    assert left == UNPROCESSED
    calls.send(WireBody.of_unprocessed(left))
    assert json.loads(sent[1].body) == {"RequestItems": UNPROCESSED}
