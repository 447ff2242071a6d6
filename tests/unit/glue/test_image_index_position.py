"""The inventory job writes the index from an image on a first start only, and joins the
consumer's in-order stream at the image's txid without overtaking a consumer that got there
first (glue_jobs/image_index.py), against moto's DynamoDB in process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from glue_jobs.image_index import IndexRefused, check_first_start, join_stream
from hdfs_events.sequencer_items import applied_through
from hdfs_events_cli.index_status import read_status
from tests.kit.index_table import create_index_table

TABLE, CLUSTER, T = "index", "prod", 1513


@pytest.fixture
def ddb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_index_table(client, TABLE)
        yield client


def test_a_first_start_joins_the_stream_at_the_image_txid(ddb):
    assert check_first_start(ddb, TABLE, CLUSTER, T) is False
    join_stream(ddb, TABLE, CLUSTER, T)
    status = read_status(ddb, TABLE, CLUSTER)
    assert (status.txid, status.index) == (T, None)  # all of T applied: the next range is T+1
    assert check_first_start(ddb, TABLE, CLUSTER, T) is True  # a rerun writes the marker only
    join_stream(ddb, TABLE, CLUSTER, T)


def test_an_index_the_consumer_applied_is_refused_naming_its_txid(ddb):
    ddb.put_item(TableName=TABLE, Item=applied_through(CLUSTER, T + 40))
    with pytest.raises(IndexRefused, match=rf"applied up to txid {T + 40}.*first start only"):
        check_first_start(ddb, TABLE, CLUSTER, T)


def test_a_consumer_that_got_there_first_is_not_overtaken(ddb):
    ddb.put_item(TableName=TABLE, Item={**applied_through(CLUSTER, T + 3),
                                         "idx": {"N": "2"}})
    with pytest.raises(IndexRefused, match=rf"txid {T + 3}"):
        join_stream(ddb, TABLE, CLUSTER, T)
    assert read_status(ddb, TABLE, CLUSTER).txid == T + 3
