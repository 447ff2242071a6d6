"""Fixtures of the sync's unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws


@pytest.fixture
def s3() -> Iterator[Any]:
    """An in-process moto S3 client with the replica's bucket, `replica`, in eu-west-1."""
    with mock_aws():
        client = boto3.client("s3")
        client.create_bucket(Bucket="replica",
                             CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        yield client
