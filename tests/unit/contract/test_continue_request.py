"""Continue requests: the consumer reads back what it sent itself, in a group of its own."""

from __future__ import annotations

import pytest

from hdfs_events import names
from hdfs_events.continue_request import (
    continue_attributes,
    continue_dedup_id,
    continue_group_id,
    decode_continue_request,
    encode_continue_request,
)
from hdfs_events.ids import message_group_id
from hdfs_events.manifest import is_manifest, manifest_group_id


def test_a_continue_request_names_its_cluster() -> None:
    assert decode_continue_request(encode_continue_request("prod")) == "prod"


@pytest.mark.parametrize("body", ['{"cluster": "a b"}', '{"cluster": 3}', "{}", "[]", "x"])
def test_a_body_that_names_no_valid_cluster_is_refused(body: str) -> None:
    with pytest.raises((ValueError, KeyError, TypeError)):
        decode_continue_request(body)


def test_the_wire_values_of_queued_requests_stay_readable() -> None:
    # Requests sent before the rename to "continue" are still on queues: same values.
    assert continue_group_id("prod") == "prod:#drain"
    assert continue_dedup_id("prod", "12.3") == "prod-drain-12.3"
    assert continue_attributes() == {"kind": {"DataType": "String", "StringValue": "drain"}}
    assert names.KIND_CONTINUE == "drain" and not is_manifest(continue_attributes())


def test_its_group_is_neither_the_manifests_nor_an_events_group() -> None:
    groups = {message_group_id("prod", "/"), message_group_id("prod", "/data"),
              manifest_group_id("prod")}
    assert continue_group_id("prod") not in groups
