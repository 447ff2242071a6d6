"""The consumer's DynamoDB and S3 on moto server, as the Lambda's environment names them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from hdfs_events import names
from lambdas.ingest import handler
from tests.kit.ingest_aws import BUCKET, TABLE, create_resources
from tests.kit.lambda_events import cluster_senders


@pytest.fixture
def ddb(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The index table (with the lake and queue beside it) and the handler's settings."""
    client = boto3.client("dynamodb")
    url = create_resources(boto3.client("s3"), client, boto3.client("sqs"))
    for key, value in {names.ENV_LAKE_BUCKET: BUCKET, names.ENV_INDEX_TABLE: TABLE,
                       names.ENV_INDEX_PREFIXES: "/data", names.ENV_LOG_MODE: "summary",
                       names.ENV_EVENT_QUEUE_URL: url,
                       names.ENV_CLUSTER_SENDERS: cluster_senders()}.items():
        monkeypatch.setenv(key, value)
    handler.consumer.cache_clear()
    yield client
    handler.consumer.cache_clear()
