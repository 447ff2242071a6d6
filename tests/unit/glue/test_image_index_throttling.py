"""The image job's index writes when DynamoDB throttles a partition key (glue_jobs/image_index.py,
`write_partition`): BatchWriteItem answers with UnprocessedItems, the items it wrote are done and
the rest are sent again, as long as the calls keep writing some; a run of resends that write
nothing fails the task, naming how many items are left. Nothing leaves the process: botocore's
`before-send` answers as DynamoDB would."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from glue_jobs.image_index import write_partition

TABLE = "hdfs-events-index"


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.status_code, self.headers, self.content = 200, {}, body

    def stream(self, **_: Any) -> Any:
        return iter([self.content])


def put(name: str) -> str:
    return ('{"PutRequest":{"Item":{"parent":{"S":"c#/landing//3"},"name":{"S":"' + name
            + '"}}}}')


class ThrottledTable:
    """Writes at most `writes_per_call[i]` items of call i (then `after` a call), leaving the
    rest unprocessed, as DynamoDB does past a partition's 1,000 WCU/s."""

    def __init__(self, writes_per_call: list[int], after: int) -> None:
        self.writes_per_call, self.after = writes_per_call, after
        self.written: list[str] = []
        self.calls = 0

    def client(self, threads: int) -> Any:
        client = boto3.client("dynamodb", region_name="us-east-1",
                              endpoint_url="http://127.0.0.1:9", aws_access_key_id="k",
                              aws_secret_access_key="s")
        client.meta.events.register("before-send.dynamodb.BatchWriteItem", self._answer)
        return client

    def _answer(self, request: Any, **_: Any) -> AWSResponse:
        requests = json.loads(request.body)["RequestItems"][TABLE]
        allowed = (self.writes_per_call[self.calls] if self.calls < len(self.writes_per_call)
                   else self.after)
        self.calls += 1
        done, left = requests[:allowed], requests[allowed:]
        self.written += [r["PutRequest"]["Item"]["name"]["S"] for r in done]
        body = {"UnprocessedItems": {TABLE: left}} if left else {"UnprocessedItems": {}}
        return AWSResponse(request.url, 200, {}, _Raw(json.dumps(body).encode()))


def test_a_throttled_key_is_outwaited_while_each_call_writes_some():
    names = [f"f{i:02d}" for i in range(25)]
    table = ThrottledTable([], after=2)  # 2 items a call: 13 calls for one batch of 25
    waits: list[float] = []
    [counts] = write_partition(TABLE, 1, table.client, sleep=waits.append)(map(put, names))
    assert sorted(table.written) == names  # each item written once, none lost
    assert counts == {"entries": 25, "batch_calls": 13, "unprocessed_retries": 12}
    assert waits == [0.05] * 12  # progress every call: the base wait, never a longer one


def test_resends_that_write_nothing_fail_the_task_naming_what_is_left():
    table = ThrottledTable([5], after=0)  # the first call writes 5, then nothing more
    waits: list[float] = []
    write = write_partition(TABLE, 1, table.client, sleep=waits.append)
    with pytest.raises(RuntimeError, match=r"left 20 index writes unprocessed in 10 calls in a "
                                           r"row \(throttled 11 calls in all\)"):
        list(write(put(f"f{i:02d}") for i in range(25)))
    assert waits == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0, 2.0, 2.0]
    assert len(table.written) == 5
