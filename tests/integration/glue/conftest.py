"""One local SparkSession for the whole glue suite (starting one costs 3-10 s) that opens
s3a:// paths of the moto server, and lakes in that server's S3 laid out as the consumer Lambda
writes them. The suite reaches moto only through AWS_ENDPOINT_URL, as the jobs reach S3."""

from __future__ import annotations

import os
from collections.abc import Iterator

import boto3
import pytest

from onprem_agent.editlog import read_ops
from onprem_agent.translate import translate_ops
from tests.integration.glue.lake import RawLake


@pytest.fixture(scope="package")
def lake_endpoint(moto_server: str) -> Iterator[str]:
    """AWS_ENDPOINT_URL for the whole package: the Spark session and module-scoped lakes
    outlive a test (each lake has its own bucket, so no state needs resetting)."""
    saved = os.environ.get("AWS_ENDPOINT_URL")
    os.environ["AWS_ENDPOINT_URL"] = moto_server
    yield moto_server
    if saved is None:
        os.environ.pop("AWS_ENDPOINT_URL", None)
    else:
        os.environ["AWS_ENDPOINT_URL"] = saved


@pytest.fixture(scope="package")
def spark(lake_endpoint: str) -> Iterator[object]:
    from pyspark.sql import SparkSession

    from glue_jobs.runtime import job_conf

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("glue-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in job_conf(s3a=True).items():  # what a local job run configures
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="package")
def s3(lake_endpoint: str) -> object:
    return boto3.client("s3")


@pytest.fixture
def lake(s3) -> RawLake:
    return RawLake(s3)


@pytest.fixture(scope="session")
def sample_events(edits_sample) -> list:
    """The real edit log translated by the agent: 32 events of txids 4..87, January 2015."""
    return list(translate_ops(read_ops(edits_sample), "c1"))
