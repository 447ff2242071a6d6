"""The namespace index's DynamoDB table, keyed as the Storage stack declares it (names.INDEX_PK
and names.INDEX_SK, both strings, on demand), for tests that write or read the index through
moto."""

from __future__ import annotations

from typing import Any

from hdfs_events import names


def create_index_table(ddb: Any, name: str) -> str:
    ddb.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": names.INDEX_PK, "AttributeType": "S"},
                              {"AttributeName": names.INDEX_SK, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": names.INDEX_PK, "KeyType": "HASH"},
                   {"AttributeName": names.INDEX_SK, "KeyType": "RANGE"}])
    return name
