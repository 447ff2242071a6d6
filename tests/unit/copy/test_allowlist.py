"""Allow-lists match whole path components; the allowed roots themselves are not targets."""

from __future__ import annotations

from pathlib import Path

import pytest

from hdfs_events.copy_request import make_request
from onprem_agent.config import parse_config
from onprem_agent.copy_worker.allowlist import check_allowed
from onprem_agent.copy_worker.failures import Rejected
from onprem_agent.copy_worker.settings import COPY

SETTINGS = parse_config({"cluster": "prod-nn1", "sqs": {"queue_url": "https://sqs.x/1/q.fifo"},
                         "checkpoint": {"path": "cp.json"}, "copy": {
    "queue_url": "q", "transfers_table": "t",
    "allowed_sources": ["s3://lake-exports/exports/", "s3://whole-bucket"],
    "allowed_destinations": ["/data/imports/", "/user/etl/in"],
    "notify_topic_arn": "arn:aws:sns:eu-west-1:123456789012:ops",
    "allowed_notify_topics": ["arn:aws:sns:eu-west-1:123456789012:team"],
    "max_objects": 3, "max_bytes": 100}}, Path("agent.toml")).read(COPY)


def request(source: str = "s3://lake-exports/exports/a/", destination: str = "/data/imports/a",
            **kw: object):  # type: ignore[no-untyped-def]
    return make_request(request_id="r1", source=source, destination=destination,
                        mode="update", **kw)


@pytest.mark.parametrize(("source", "destination"), [
    ("s3://lake-exports/exports/a/", "/data/imports/a"),
    ("s3a://lake-exports/exports/", "/data/imports/a/b/c"),
    ("s3://whole-bucket/anything/", "/user/etl/in/x"),
    ("s3://whole-bucket", "/user/etl/in/x"),
])
def test_allowed(source: str, destination: str) -> None:
    check_allowed(request(source, destination), SETTINGS)


@pytest.mark.parametrize(("source", "destination", "reason"), [
    ("s3://lake-exports/exports-old/a/", "/data/imports/a", "source"),
    ("s3://lake-exports/export/", "/data/imports/a", "source"),
    ("s3://lake-exports/", "/data/imports/a", "source"),
    ("s3://other/exports/a/", "/data/imports/a", "source"),
    ("s3://lake-exports/exports/a/", "/data/imports", "destination"),
    ("s3://lake-exports/exports/a/", "/data/imports2/a", "destination"),
    ("s3://lake-exports/exports/a/", "/data", "destination"),
    ("s3://lake-exports/exports/a/", "/user/etl/inbox/a", "destination"),
])
def test_refused(source: str, destination: str, reason: str) -> None:
    with pytest.raises(Rejected, match=f"^{reason}:"):
        check_allowed(request(source, destination), SETTINGS)


def test_notify_topic_must_be_configured() -> None:
    check_allowed(request(notify="arn:aws:sns:eu-west-1:123456789012:team"), SETTINGS)
    check_allowed(request(notify="arn:aws:sns:eu-west-1:123456789012:ops"), SETTINGS)
    with pytest.raises(Rejected, match=r"^notify:"):
        check_allowed(request(notify="arn:aws:sns:eu-west-1:999999999999:x"), SETTINGS)


def test_manifest_bounds_are_the_workers() -> None:
    small = [{"key": f"exports/a/p{i}", "size": 10} for i in range(3)]
    check_allowed(request(copy_listing=small), SETTINGS)
    with pytest.raises(Rejected, match="max_objects"):
        check_allowed(request(copy_listing=[*small, {"key": "exports/a/p9", "size": 1}]), SETTINGS)
    with pytest.raises(Rejected, match="max_bytes"):
        check_allowed(request(copy_listing=[{"key": "exports/a/big", "size": 101}]), SETTINGS)
