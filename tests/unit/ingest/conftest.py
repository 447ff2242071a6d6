"""AWS for the consumer's unit tests: moto in-process with the bucket, table and FIFO queues the
stack would create, and the environment the stack would set."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from hdfs_events import names
from tests.kit import moto_dynamodb_lock
from tests.kit.ingest_aws import BUCKET, TABLE, Aws, create_resources
from tests.kit.lambda_events import cluster_senders

_loggers = itertools.count()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    moto_dynamodb_lock.apply()  # the index store's parallel writes to a new partition all land
    with mock_aws():
        s3, ddb, sqs = boto3.client("s3"), boto3.client("dynamodb"), boto3.client("sqs")
        queues = create_resources(s3, ddb, sqs)
        monkeypatch.setenv(names.ENV_LAKE_BUCKET, BUCKET)
        monkeypatch.setenv(names.ENV_INDEX_TABLE, TABLE)
        monkeypatch.setenv(names.ENV_INDEX_PREFIXES, "/")
        monkeypatch.setenv(names.ENV_LOG_MODE, "all")
        monkeypatch.setenv(names.ENV_APPLY_QUEUE_URL, queues.apply)
        monkeypatch.setenv(names.ENV_CLUSTER_SENDERS, cluster_senders())
        monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "hdfs-events-ingest")
        monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", names.METRICS_NAMESPACE)
        from lambdas.ingest import handler
        handler.consumer.cache_clear()
        yield Aws(s3=s3, ddb=ddb, sqs=sqs, queues=queues)
        handler.consumer.cache_clear()


@pytest.fixture
def ddb() -> Iterator[Any]:
    """A client to look at the table; the stores make their own, as in the Lambda."""
    moto_dynamodb_lock.apply()
    with mock_aws():
        client = boto3.client("dynamodb")
        create_resources(boto3.client("s3"), client, boto3.client("sqs"))
        yield client


class _CurrentStdout:
    """sys.stdout as it is when written to: capsys swaps it after fixtures are set up."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


@pytest.fixture
def logs(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A powertools Logger writing to the captured stdout, for the consumer built next (the
    handler's own singleton keeps the stdout it found at import)."""
    from aws_lambda_powertools import Logger

    from lambdas.ingest import handler
    # A fresh service name each time: powertools reuses the handler of a known service name.
    service = f"ingest-test-{next(_loggers)}"
    monkeypatch.setattr(handler, "logger", Logger(service=service, stream=_CurrentStdout()))
    handler.consumer.cache_clear()
