"""The copy request contract: canonical round trip and refusal of what no deployment accepts."""

from __future__ import annotations

import json

import pytest

from hdfs_events.copy_request import (
    MAX_COPY_LISTING_ENTRIES,
    CopyMode,
    CopyRequestError,
    decode_request,
    is_within,
    make_request,
)

GOOD = {"v": 1, "request_id": "sales-2026-11-20", "source": "s3://lake-exports/sales/dt=1/",
        "destination": "/data/imports/sales/dt=1", "mode": "update"}


def text(**changes: object) -> str:
    doc = {**GOOD, **changes}
    return json.dumps({k: v for k, v in doc.items() if v is not None})


def test_valid_request_round_trips_in_canonical_form() -> None:
    request = decode_request(text(source="s3a://lake-exports/sales/dt=1",
                                  destination="/data/imports/sales/dt=1/"))
    assert request.source.bucket == "lake-exports"
    assert request.source.prefix == "sales/dt=1/"
    assert request.source.s3a_uri == "s3a://lake-exports/sales/dt=1/"
    assert request.destination == "/data/imports/sales/dt=1"
    assert request.mode is CopyMode.UPDATE
    again = decode_request(request.to_json())
    assert again == request
    assert again.fingerprint == request.fingerprint
    assert json.loads(request.to_json())["source"] == "s3://lake-exports/sales/dt=1/"


def test_manifest_and_notify_are_kept() -> None:
    request = decode_request(text(
        manifest=[{"key": "sales/dt=1/part-0", "size": 10}, {"key": "sales/dt=1/a/b", "size": 0}],
        notify="arn:aws:sns:eu-west-1:123456789012:copy-outcomes"))
    assert [(e.key, e.size) for e in request.copy_listing] == [("sales/dt=1/part-0", 10),
                                                           ("sales/dt=1/a/b", 0)]
    assert request.relative_name("sales/dt=1/a/b") == "a/b"
    assert decode_request(request.to_json()) == request


def test_names_with_spaces_equals_and_percent_are_fine() -> None:
    request = decode_request(text(destination="/data/imports/Q4 report/dt=2026-11-20 00%3A00"))
    assert request.destination.endswith("00%3A00")


def test_fingerprint_differs_when_anything_differs() -> None:
    a = decode_request(text())
    b = decode_request(text(mode="overwrite"))
    assert a.fingerprint != b.fingerprint


def test_group_and_dedup_ids_are_sqs_safe() -> None:
    request = decode_request(text(destination="/data/imports/" + "x/" * 150 + "y"))
    assert len(request.message_group_id) <= 128
    assert request.deduplication_id == "sales-2026-11-20"
    other = decode_request(text(request_id="other"))
    assert other.message_group_id == decode_request(text()).message_group_id  # same directory


@pytest.mark.parametrize(("body", "field"), [
    (text(source="s3://lake-exports/a;b/"), "source"),
    (text(destination="/data/imports/$(id)"), "destination"),
    (text(destination="/data/imports/`id`"), "destination"),
    (text(destination="/data/imports/a\nb"), "destination"),
    (text(destination="/data/imports/a\x00b"), "destination"),
    (text(destination="/data/imports/a\x1bb"), "destination"),
    (text(destination="/data/imports/\u202ecod.exe"), "destination"),
    (text(destination="/data/imports/a\u2028b"), "destination"),
    (text(destination="/data/../etc"), "destination"),
    (text(destination="/data/./imports"), "destination"),
    (text(destination="/data//imports"), "destination"),
    (text(destination="data/imports"), "destination"),
    (text(destination="/"), "destination"),
    (text(destination="/data/a:b"), "destination"),
    (text(destination="/data/" + "a" * 256), "destination"),
    (text(destination="/d/" + "a/" * 3000), "destination"),
    (text(source="s3://lake-exports/../x/"), "source"),
    (text(source="s3://lake-exports/a/*/"), "source"),
    (text(source="s3://lake-exports/{a,b}/"), "source"),
    (text(source="s3://lake-exports//x/"), "source"),
    (text(source="s3://lake-exports/" + "k" * 1100 + "/"), "source"),
    (text(source="hdfs://nn/x/"), "source"),
    (text(source="https://lake-exports.s3.amazonaws.com/x/"), "source"),
    (text(source="S3://lake-exports/x/"), "source"),
    (text(source="s3://Bad_Bucket/x/"), "source"),
    (text(source="s3://a..b/x/"), "source"),
    (text(source="s3:///x/"), "source"),
    (text(source=""), "source"),
    (text(mode="delete"), "mode"),
    (text(mode=["update"]), "mode"),
    (text(request_id=""), "request_id"),
    (text(request_id="a b"), "request_id"),
    (text(request_id="-rf"), "request_id"),
    (text(request_id="x" * 81), "request_id"),
    (text(request_id=7), "request_id"),
    (text(request_id=None), "request_id"),
    (text(v=2), "v"),
    (text(v=True), "v"),
    (text(v="1"), "v"),
    (text(extra="x"), "extra"),
    (text(notify="arn:aws:sqs:eu-west-1:123456789012:q"), "notify"),
    (text(notify="https://evil.example/hook"), "notify"),
    ('{"v": 1, "v": 1, "request_id": "a", "source": "s3://bb-b/x/", "destination": "/d/x", '
     '"mode": "update"}', "v"),
    ("[]", "body"),
    ("null", "body"),
    ("not json", "body"),
    ('{"v": NaN}', "body"),
    ("[" * 100_000 + "]" * 100_000, "body"),
    ("x" * 1_100_000, "body"),
])
def test_hostile_or_malformed_request_is_refused_naming_the_field(body: str, field: str) -> None:
    with pytest.raises(CopyRequestError) as caught:
        decode_request(body)
    assert caught.value.field == field, str(caught.value)


@pytest.mark.parametrize(("manifest", "field"), [
    ("x", "manifest"),
    ([], "manifest"),
    (["sales/dt=1/a"], "manifest[0]"),
    ([{"key": "sales/dt=1/a"}], "manifest[0].size"),
    ([{"key": "sales/dt=1/a", "size": -1}], "manifest[0].size"),
    ([{"key": "sales/dt=1/a", "size": 1.5}], "manifest[0].size"),
    ([{"key": "sales/dt=1/a", "size": True}], "manifest[0].size"),
    ([{"key": "sales/dt=1/a", "size": 6 * 1024**4}], "manifest[0].size"),
    ([{"key": "sales/dt=2/a", "size": 1}], "manifest[0].key"),
    ([{"key": "sales/dt=1/", "size": 1}], "manifest[0].key"),
    ([{"key": "sales/dt=1/sub/", "size": 0}], "manifest[0].key"),
    ([{"key": "sales/dt=1/../../etc/passwd", "size": 1}], "manifest[0].key"),
    ([{"key": "sales/dt=1/a", "size": 1, "cmd": "x"}], "manifest[0]"),
    ([{"key": "sales/dt=1/a", "size": 1}, {"key": "sales/dt=1/a", "size": 1}],
     "manifest[1].key"),
    ([{"key": f"sales/dt=1/p{i}", "size": 1} for i in range(MAX_COPY_LISTING_ENTRIES + 1)],
     "manifest"),
])
def test_bad_manifest_is_refused(manifest: object, field: str) -> None:
    with pytest.raises(CopyRequestError) as caught:
        decode_request(text(manifest=manifest))
    assert caught.value.field == field, str(caught.value)


def test_make_request_validates_like_decode() -> None:
    with pytest.raises(CopyRequestError, match="destination"):
        make_request(request_id="a", source="s3://bbb/x/", destination="../x", mode="update")
    request = make_request(request_id="a", source="s3://bbb/x", destination="/d/x",
                           mode="skip-existing")
    assert request.mode is CopyMode.SKIP_EXISTING


@pytest.mark.parametrize(("path", "root", "inside"), [
    ("/data/imports/x", "/data/imports/", True),
    ("/data/imports", "/data/imports", True),
    ("/data/imports2/x", "/data/imports", False),
    ("/data/import", "/data/imports", False),
])
def test_is_within_respects_component_boundaries(path: str, root: str, inside: bool) -> None:
    assert is_within(path, root) is inside


@pytest.mark.parametrize(("destination", "says"), [
    ("/data/imports/a\uff0f..\uff0fetc", "U+FF0F (FULLWIDTH SOLIDUS) looks like '/'"),
    ("/data/imports/a\u2215..\u2215etc", "U+2215 (DIVISION SLASH) looks like '/'"),
    ("/data/imports/a\u2044b", "U+2044 (FRACTION SLASH)"),
    ("/data/imports/\u2024\u2024/x", "U+2024 (ONE DOT LEADER)"),
    ("/data/imports/\uff0e\uff0e/x", "U+FF0E (FULLWIDTH FULL STOP)"),
    ("/data/imports/x\u00b7y", "U+00B7 (MIDDLE DOT)"),
    ("/data/imports/a\u2216b", "U+2216 (SET MINUS)"),
    ("/data/imports/\u3164", "invisible character U+3164 (HANGUL FILLER)"),
    ("/data/imports/x\u115fy", "invisible character U+115F"),
    ("/data/imports/x\u2800", "invisible character U+2800"),
    ("/data/imports/x\u00a0y", "invisible character U+00A0"),
    ("/data/imports/x\u3000y", "invisible character U+3000"),
    ("/data/imports/x\ufe0fy", "invisible character U+FE0F"),
    ("/data/imports/x\u200by", "format character U+200B"),
    ("/data/imports/x\u2066y", "format character U+2066"),
    ("/data/imports/x\ue000y", "format character U+E000"),
])
def test_lookalike_and_invisible_characters_are_refused_in_paths(destination: str,
                                                                 says: str) -> None:
    with pytest.raises(CopyRequestError) as caught:
        decode_request(text(destination=destination))
    assert caught.value.field == "destination"
    assert says in str(caught.value)
    with pytest.raises(CopyRequestError):  # S3 keys follow the same rule
        decode_request(text(source="s3://lake-exports/" + destination.removeprefix(
            "/data/imports/") + "/"))


def test_names_in_other_scripts_are_fine() -> None:
    for name in ("caf\u00e9", "\u65e5\u672c\u8a9e", "\u30c7\u30fc\u30bf\u30fb\u5206\u6790",
                 "\u0645\u0644\u0641", "na\u0131ve"):
        assert decode_request(text(destination=f"/data/imports/{name}")).destination.endswith(
            name)


@pytest.mark.parametrize("digits", [20, 400, 4_300, 5_000, 100_000])
def test_numbers_with_thousands_of_digits_are_refused_not_crashed_on(digits: int) -> None:
    body = text(manifest=[{"key": "sales/dt=1/part-0", "size": 0}]).replace(
        '"size": 0', '"size": ' + "9" * digits)
    with pytest.raises(CopyRequestError) as caught:
        decode_request(body)
    assert caught.value.field in ("manifest[0].size", "body")
    assert len(str(caught.value)) < 300
