"""The consumer's DynamoDB, S3 and queues on moto server, as the Lambda's environment names
them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from hdfs_events import names
from lambdas.ingest import handler
from tests.kit.ingest_aws import BUCKET, TABLE, Aws, create_resources
from tests.kit.lambda_events import cluster_senders


@pytest.fixture
def aws(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    """The lake, the index table and the two queues, and the handler's settings."""
    s3, ddb, sqs = boto3.client("s3"), boto3.client("dynamodb"), boto3.client("sqs")
    queues = create_resources(s3, ddb, sqs)
    for key, value in {names.ENV_LAKE_BUCKET: BUCKET, names.ENV_INDEX_TABLE: TABLE,
                       names.ENV_INDEX_PREFIXES: "/data", names.ENV_LOG_MODE: "summary",
                       names.ENV_APPLY_QUEUE_URL: queues.apply,
                       names.ENV_CLUSTER_SENDERS: cluster_senders()}.items():
        monkeypatch.setenv(key, value)
    handler.consumer.cache_clear()
    yield Aws(s3=s3, ddb=ddb, sqs=sqs, queues=queues)
    handler.consumer.cache_clear()


@pytest.fixture
def ddb(aws: Aws) -> Any:
    """The index table's client (the lake and queues beside it, set up by `aws`)."""
    return aws.ddb
