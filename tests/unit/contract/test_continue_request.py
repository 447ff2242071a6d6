"""Continue requests: the consumer reads back what it sent itself, in a group of its own."""

from __future__ import annotations

import pytest

from hdfs_events import names
from hdfs_events.continue_request import (
    CLOCK_SKEW_MS,
    ContinueRequest,
    continue_attributes,
    continue_dedup_id,
    continue_group_id,
    decode_continue_request,
    encode_continue_request,
    window_of,
)
from hdfs_events.ids import message_group_id
from hdfs_events.manifest import is_manifest, manifest_group_id


def test_a_continue_request_names_its_cluster_and_its_window() -> None:
    request = ContinueRequest("prod", 1_700_000_001_000)
    assert decode_continue_request(encode_continue_request(request)) == request
    assert request.look_until_ms == 1_700_000_001_000 + CLOCK_SKEW_MS
    assert decode_continue_request(encode_continue_request(ContinueRequest("prod"))) == \
        ContinueRequest("prod", None)


def test_a_request_queued_before_the_windows_has_none() -> None:
    assert decode_continue_request('{"cluster": "prod"}') == ContinueRequest("prod", None)
    assert ContinueRequest("prod").look_until_ms is None


def test_the_requests_of_one_second_share_their_key_and_end() -> None:
    assert window_of(1_700_000_000_000) == window_of(1_700_000_000_999) == \
        ("w1700000000", 1_700_000_001_000)
    assert window_of(1_700_000_001_000) == ("w1700000001", 1_700_000_002_000)


@pytest.mark.parametrize("body", ['{"cluster": "a b"}', '{"cluster": 3}', "{}", "[]", "x"])
def test_a_body_that_names_no_valid_cluster_is_refused(body: str) -> None:
    with pytest.raises((ValueError, KeyError, TypeError)):
        decode_continue_request(body)


@pytest.mark.parametrize("window", ['"1"', "-1", "1.5", "true"])
def test_a_window_that_is_not_an_epoch_ms_is_refused_by_name(window: str) -> None:
    with pytest.raises(ValueError, match="window_end_ms: must be a non-negative integer"):
        decode_continue_request(f'{{"cluster": "prod", "window_end_ms": {window}}}')


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
