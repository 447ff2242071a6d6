"""The bench's DynamoDB latency double with the per-key write limit modelled
(bench/dynamodb_latency.py, `--key-limit`): past 1,000 items a partition key in one second, the
rest of a BatchWriteItem comes back as UnprocessedItems, item for item as sent; the next second
a key takes its 1,000 again; other keys are not held back by a hot one."""

from __future__ import annotations

import json

from bench import dynamodb_latency
from bench.dynamodb_latency import _KeyLimit


def body(*keys: str) -> bytes:
    return json.dumps({"RequestItems": {"index": [
        {"PutRequest": {"Item": {"parent": {"S": key}, "name": {"S": f"n{i}"}}}}
        for i, key in enumerate(keys)]}}).encode()


def test_a_key_past_its_writes_a_second_gets_the_rest_back_unprocessed(monkeypatch):
    now = [100.2]
    monkeypatch.setattr(dynamodb_latency.time, "monotonic", lambda: now[0])
    limit = _KeyLimit(3)
    assert limit.reply(body("hot", "hot", "cold")) == b"{}"
    reply = json.loads(limit.reply(body("hot", "cold", "hot", "hot")))
    assert reply == {"UnprocessedItems": {"index": [
        {"PutRequest": {"Item": {"parent": {"S": "hot"}, "name": {"S": f"n{i}"}}}}
        for i in (2, 3)]}}  # the third write of "hot" was its last this second; "cold" passed
    now[0] = 101.0  # the next second
    assert limit.reply(body("hot", "hot", "hot")) == b"{}"



def test_a_repairs_deletes_count_against_their_key_too(monkeypatch):
    monkeypatch.setattr(dynamodb_latency.time, "monotonic", lambda: 100.2)
    limit = _KeyLimit(1)
    deletes = json.dumps({"RequestItems": {"index": [
        {"DeleteRequest": {"Key": {"parent": {"S": "hot"}, "name": {"S": f"n{i}"}}}}
        for i in range(2)]}}).encode()
    assert json.loads(limit.reply(deletes)) == {"UnprocessedItems": {"index": [
        {"DeleteRequest": {"Key": {"parent": {"S": "hot"}, "name": {"S": "n1"}}}}]}}
