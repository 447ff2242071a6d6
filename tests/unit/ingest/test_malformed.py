"""A corpus of bad bodies: each is quarantined with a reason naming the problem, acknowledged,
counted, and does not hold up the next message of its own group."""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from hdfs_events import names
from lambdas.ingest import handler
from tests.kit.ingest_aws import emf_documents
from tests.kit.ingest_builders import pack, sample_events
from tests.kit.lambda_events import Context, Sent, event

GOOD = {"cluster": "prod", "txid": 5, "index": 0, "type": "CREATE", "path": "/a",
        "timestamp": 1_421_135_800_000, "inode_type": "FILE"}


def env(*events: dict, **extra: object) -> str:
    return json.dumps({"v": 1, "events": list(events), **extra})


def with_(**changes: object) -> dict:
    d = dict(GOOD)
    for k, v in changes.items():
        if v is _DROP:
            d.pop(k)
        else:
            d[k] = v
    return d


_DROP = object()


def gz(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(gzip.compress(raw)).decode()


CORPUS: list[tuple[str, str | None, str]] = [
    # (body, encoding attribute, a fragment the reason must contain)
    ("", "json", "not JSON"),
    ("   ", "json", "not JSON"),
    ("hello", "json", "not JSON"),
    ("{", "json", "not JSON"),
    ("{'v': 1}", "json", "not JSON"),
    ('{"v":1,"events":[', None, "not JSON"),
    ("[]", "json", "must be a JSON object"),
    ("42", "json", "must be a JSON object"),
    ("null", "json", "must be a JSON object"),
    ('"text"', "json", "must be a JSON object"),
    (json.dumps({"events": [GOOD]}), "json", "unsupported envelope version None"),
    (json.dumps({"v": 2, "events": [GOOD]}), "json", "unsupported envelope version 2"),
    (json.dumps({"v": "1", "events": [GOOD]}), "json", "unsupported envelope version '1'"),
    (json.dumps({"v": True, "events": [GOOD]}), "json", "unsupported envelope version True"),
    (env(GOOD, extra=1), "json", "unknown envelope field(s) ['extra']"),
    (json.dumps({"v": 1}), "json", "'events' must be a non-empty list"),
    (env(), "json", "'events' must be a non-empty list"),
    (json.dumps({"v": 1, "events": {"a": 1}}), "json", "'events' must be a non-empty list"),
    (env(1), "json", "event 0: event must be a JSON object"),
    (env(with_(txid=_DROP)), "json", "missing required field 'txid'"),
    (env(with_(path=None)), "json", "missing required field 'path'"),
    (env(with_(colour="blue")), "json", "unknown field(s) ['colour']"),
    (env(with_(txid="5")), "json", "field 'txid' must be int"),
    (env(with_(txid=True)), "json", "field 'txid' must be int"),
    (env(with_(type="MKDIR")), "json", "'MKDIR' is not a valid EventType"),
    (env(with_(inode_type="BLOCK")), "json", "'BLOCK' is not a valid INodeType"),
    (env(with_(acls="user::rwx")), "json", "'acls' must be a list"),
    (env(with_(xattrs=[{"name": 1}])), "json", "each xattr needs string"),
    (env(GOOD, with_(txid=6, cluster="dev")), "json", "cluster 'dev' in a message of 'prod'"),
    (env(with_(cluster="bad cluster!")), "json", "cluster name 'bad cluster!' is not valid"),
    (env(with_(txid=9), with_(txid=8)), "json", "(8, 0) does not follow (9, 0)"),
    (env(GOOD, GOOD), "json", "(5, 0) does not follow (5, 0)"),
    ("!!!not base64!!!", "gzip+base64", "not valid base64"),
    (base64.b64encode(b"plain bytes, not gzip").decode(), "gzip+base64", "not valid gzip"),
    (base64.b64encode(gzip.compress(env(GOOD).encode())[:-12]).decode(), "gzip+base64",
     "truncated"),
    (gz(b"\xff\xfe not utf-8"), "gzip+base64", "not UTF-8"),
    (gz(b" " * (65 * 1_048_576)), "gzip+base64", "expands past"),
    (env(GOOD), "zstd", "unknown encoding attribute 'zstd'"),
    (env(GOOD) + " " * 1_048_577, "json", "exceeds the SQS 1 MiB limit"),
]


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 30


@pytest.mark.parametrize(("body", "encoding", "reason"), CORPUS,
                         ids=[f"{i:02d}-{c[2][:30]}" for i, c in enumerate(CORPUS)])
def test_bad_body_is_quarantined_and_its_group_goes_on(aws, capsys, body, encoding,
                                                       reason) -> None:
    good = pack(sample_events()[:4], per_message=4, strategy="single")[0]
    bad = Sent(body=body, encoding=encoding, group_id=good.group_id, dedup_id="bad-1",
               sent_ms=1_700_000_000_000, message_id="bad-message-1")
    response = handler.handler(event(bad, good), Context())
    assert response == {"batchItemFailures": []}  # acknowledged, not retried
    (key,) = aws.lake_keys("quarantine/")
    assert key == "quarantine/ingest/dt=2023-11-14/bad-message-1.json"
    doc = json.loads(aws.get(key))
    assert reason in doc["reason"]
    assert doc["body"] == body  # kept whole, to fix and re-send
    assert doc["attributes"]["MessageGroupId"] == good.group_id
    assert doc["receive"]["receive_count"] == 1
    assert len(aws.lake_keys("raw/")) == 1  # the good message behind it went through
    docs = emf_documents(capsys.readouterr().out)
    assert sum(d.get(names.METRIC_QUARANTINED, [0])[0] for d in docs) == 1
