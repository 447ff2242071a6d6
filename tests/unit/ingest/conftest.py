"""AWS for the consumer's unit tests: moto in-process with the bucket, table and FIFO queue the
stack would create, and the environment the stack would set."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from hdfs_events import names
from tests.unit.ingest.lambda_events import cluster_senders

BUCKET = "hdfs-events-lake"
TABLE = "hdfs-events-index"
QUEUE = "hdfs-events.fifo"
_loggers = itertools.count()


@dataclass
class Aws:
    s3: Any
    ddb: Any
    sqs: Any
    queue_url: str

    def lake_keys(self, prefix: str = "") -> list[str]:
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def get(self, key: str) -> bytes:
        return self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()

    def index_items(self) -> list[dict]:
        """The namespace entries (not the sequencer's items beside them)."""
        return [i for i in self.table_items()
                if "!" not in i[names.INDEX_PK]["S"].partition("#")[0]]

    def table_items(self) -> list[dict]:
        pages = self.ddb.get_paginator("scan").paginate(TableName=TABLE)
        return [i for page in pages for i in page["Items"]]


def create_resources(s3: Any, ddb: Any, sqs: Any) -> str:
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    ddb.create_table(
        TableName=TABLE, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": names.INDEX_PK, "KeyType": "HASH"},
                   {"AttributeName": names.INDEX_SK, "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": names.INDEX_PK, "AttributeType": "S"},
                              {"AttributeName": names.INDEX_SK, "AttributeType": "S"}])
    return sqs.create_queue(QueueName=QUEUE, Attributes={"FifoQueue": "true"})["QueueUrl"]


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    with mock_aws():
        s3, ddb, sqs = boto3.client("s3"), boto3.client("dynamodb"), boto3.client("sqs")
        url = create_resources(s3, ddb, sqs)
        monkeypatch.setenv(names.ENV_LAKE_BUCKET, BUCKET)
        monkeypatch.setenv(names.ENV_INDEX_TABLE, TABLE)
        monkeypatch.setenv(names.ENV_INDEX_PREFIXES, "/")
        monkeypatch.setenv(names.ENV_LOG_MODE, "all")
        monkeypatch.setenv(names.ENV_EVENT_QUEUE_URL, url)
        monkeypatch.setenv(names.ENV_CLUSTER_SENDERS, cluster_senders())
        monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "hdfs-events-ingest")
        monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", names.METRICS_NAMESPACE)
        from lambdas.ingest import handler
        handler.consumer.cache_clear()
        yield Aws(s3=s3, ddb=ddb, sqs=sqs, queue_url=url)
        handler.consumer.cache_clear()


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


def emf_documents(stdout: str) -> list[dict]:
    docs = []
    for line in stdout.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            docs.append(json.loads(line))
    return docs


def log_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()
            if line.startswith("{") and '"_aws"' not in line]
