"""Manifests: the body round-trips, ids are stable, bad bodies are refused with the reason."""

from __future__ import annotations

import json

import pytest

from hdfs_events.manifest import (
    MAX_MESSAGES_PER_MANIFEST,
    ManifestError,
    decode_manifest,
    is_manifest,
    manifest_group_id,
    manifests_for,
)


def test_a_manifest_round_trips_and_names_its_range() -> None:
    (manifest,) = manifests_for("prod", 1200, 1450, ["prod-1300.0-1301.0-2", "prod-1201.0-1.0-1"])
    assert decode_manifest(manifest.to_json()) == manifest
    assert manifest.messages == ("prod-1201.0-1.0-1", "prod-1300.0-1301.0-2")  # sorted
    assert [manifest.covers(t) for t in (1200, 1201, 1450, 1451)] == [False, True, True, False]
    assert manifest.group_id == manifest_group_id("prod") == "prod:#manifest"


def test_the_first_range_has_no_start() -> None:
    (manifest,) = manifests_for("prod", None, 7, ["a"])
    assert json.loads(manifest.to_json())["after"] is None
    assert manifest.covers(0) and manifest.covers(7) and not manifest.covers(8)


def test_a_range_without_messages_still_gets_a_manifest() -> None:
    # The consumer moves past a range only when its manifest arrives, events or not.
    (manifest,) = manifests_for("prod", 3, 9, [])
    assert (manifest.after, manifest.end, manifest.messages) == (3, 9, ())


def test_many_messages_come_in_parts_of_one_range() -> None:
    ids = [f"prod-{i}.0-{i}.0-1" for i in range(2 * MAX_MESSAGES_PER_MANIFEST + 1)]
    parts = manifests_for("prod", 10, 900, ids)
    assert [(p.part, p.parts, p.after, p.end) for p in parts] == [
        (0, 3, 10, 900), (1, 3, 10, 900), (2, 3, 10, 900)]
    assert sorted(i for p in parts for i in p.messages) == sorted(ids)
    assert len({p.dedup_id for p in parts}) == 3
    assert len({p.range_id for p in parts}) == 1  # how the consumer knows the parts belong
    assert manifests_for("prod", 10, 900, ids[1:])[0].range_id != parts[0].range_id
    assert all(len(p.to_json()) < 65_536 for p in parts)  # one SQS billing chunk each


def test_dedup_id_is_the_same_for_a_resend_and_differs_for_other_messages() -> None:
    (a,) = manifests_for("prod", 5, 9, ["x", "y"])
    (b,) = manifests_for("prod", 5, 9, ["y", "x"])
    (c,) = manifests_for("prod", 5, 9, ["x", "z"])
    assert a.dedup_id == b.dedup_id != c.dedup_id


def test_the_kind_attribute_marks_a_manifest_in_both_shapes() -> None:
    (manifest,) = manifests_for("prod", 5, 9, [])
    assert is_manifest(manifest.message_attributes())
    assert is_manifest({"kind": {"stringValue": "manifest", "dataType": "String"}})
    assert not is_manifest({"encoding": {"stringValue": "gzip+base64"}})
    assert not is_manifest(None)


@pytest.mark.parametrize(("body", "reason"), [
    ("not json", "not JSON"),
    ("[]", "must be a JSON object"),
    ('{"v":2,"cluster":"prod","after":1,"end":2,"messages":[]}', "unsupported manifest version 2"),
    ('{"v":1,"cluster":"prod","after":1,"end":2,"messages":[],"x":1}', "unknown manifest field"),
    ('{"v":1,"cluster":"prod","after":"1","end":2,"messages":[]}', "'after' must be a txid"),
    ('{"v":1,"cluster":"prod","after":1,"end":null,"messages":[]}', "'end' must be a txid"),
    ('{"v":1,"cluster":"prod","after":5,"end":5,"messages":[]}', "range (5, 5] is empty"),
    ('{"v":1,"cluster":"prod","after":1,"end":2,"messages":[7]}', "list of deduplication ids"),
    ('{"v":1,"cluster":"no spaces","after":1,"end":2,"messages":[]}', "cluster name"),
    ('{"v":1,"cluster":"prod","after":1,"end":2,"part":2,"parts":2,"messages":[]}',
     "part 2 of 2"),
])
def test_bad_manifests_are_refused_with_the_reason(body: str, reason: str) -> None:
    with pytest.raises(ManifestError, match=reason.replace("(", r"\(").replace("]", r"\]")):
        decode_manifest(body)
