"""Agent-state table in the moto server, and the shared JVM for live integration tests."""

from __future__ import annotations

import boto3
import pytest

from hdfs_events.names import STATE_PK, STATE_SK

STATE_TABLE = "hdfs-events-agent-state"


@pytest.fixture
def state_table(moto_endpoint: str) -> str:
    client = boto3.client("dynamodb")
    client.create_table(
        TableName=STATE_TABLE, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": STATE_PK, "AttributeType": "S"},
                              {"AttributeName": STATE_SK, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": STATE_PK, "KeyType": "HASH"},
                   {"AttributeName": STATE_SK, "KeyType": "RANGE"}])
    return STATE_TABLE


class FakeClock:
    """Wall time the test moves by hand: leases expire without sleeping."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()



# The real-HDFS tests' queue and lake fixtures, shared with test_ha.py.
from tests.integration.hdfs.conftest import index_table, queue  # noqa: E402, F401
