"""tests/kit/moto_dynamodb_lock.py: through the threaded server, moto handles one DynamoDB
request at a time, and every item of concurrent BatchWriteItem calls into new partitions is
stored.

The GIL rarely passes inside a partition's get-or-create on its own (the 300k-file bench lost
8-16 of 315,649 entries in two of five runs), so the test makes requests slow where the race
is: a `DynamoType.__hash__` that sleeps 0.5 ms before hashing, as a preempted thread would
(moto's own Table with it, 4 threads writing 300 new partitions: 3 of 1,200 items lost, run by
hand; a loss that depends on timing is not asserted here). Without the lock the handler runs
the 4 requests at once, which is what the test catches.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from botocore.config import Config
from moto.core.responses import BaseResponse
from moto.dynamodb.models.dynamo_type import DynamoType

from tests.kit import moto_dynamodb_lock

WRITERS = 4
PARTITIONS = 100
KEYS = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
ATTRS = [{"AttributeName": "pk", "AttributeType": "S"},
         {"AttributeName": "sk", "AttributeType": "S"}]


@pytest.fixture
def slow_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = DynamoType.__hash__

    def preempted(self: DynamoType) -> int:
        time.sleep(0.0005)
        return fast(self)

    monkeypatch.setattr(DynamoType, "__hash__", preempted)


@pytest.fixture
def locked_server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    moto_dynamodb_lock.apply()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def test_through_the_locked_server_every_batch_write_is_stored(
        slow_hash: None, locked_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "eu-west-1")):
        monkeypatch.setenv(name, value)
    ddb = boto3.client("dynamodb", endpoint_url=locked_server,
                       config=Config(max_pool_connections=WRITERS))
    ddb.create_table(TableName="t", KeySchema=KEYS, AttributeDefinitions=ATTRS,
                     BillingMode="PAY_PER_REQUEST")
    # As the consumer writes a chunk: 25-item BatchWriteItem calls at once, every partition's
    # first items in all of them.
    calls = [[(f"p{p}", f"s{w}-{p}") for p in range(25 * (w // WRITERS), 25 * (w // WRITERS + 1))]
             for w in range(WRITERS * (PARTITIONS // 25))]

    def put(call: list[tuple[str, str]]) -> None:
        done = ddb.batch_write_item(RequestItems={"t": [
            {"PutRequest": {"Item": {"pk": {"S": pk}, "sk": {"S": sk}}}} for pk, sk in call]})
        assert not done.get("UnprocessedItems")

    handling, most = 0, 0
    count = threading.Lock()
    handle = BaseResponse.call_action

    def counted(self: BaseResponse, *args: Any, **kwargs: Any) -> Any:
        nonlocal handling, most
        with count:
            handling += 1
            most = max(most, handling)
        try:
            return handle(self, *args, **kwargs)
        finally:
            with count:
                handling -= 1

    monkeypatch.setattr(BaseResponse, "call_action", counted)
    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(put, calls))
    assert most == 1, f"{most} DynamoDB requests handled at once"
    stored, start = 0, {}
    while True:
        page = ddb.scan(TableName="t", Select="COUNT", **start)
        stored += page["Count"]
        if "LastEvaluatedKey" not in page:
            break
        start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}
    assert stored == sum(len(c) for c in calls)
