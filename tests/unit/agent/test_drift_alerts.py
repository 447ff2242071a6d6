"""verify's drift alerts: one SQS message per drifting path, ten per SendMessageBatch, a cap per
run with one summary past it, failed entries sent again; on moto in-process."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from hdfs_events.drift_alert import DriftSummary, PathDrift, parse_alert
from onprem_agent.commands.verify import check
from onprem_agent.drift_alerts import DriftAlertSender, new_run
from onprem_agent.verify import IndexedEntry
from tests.unit.live.doubles import DictIndex, ListingDouble, dir_entry, file_entry, indexed

C = "prod"


@pytest.fixture
def aws() -> Iterator[dict[str, Any]]:
    with mock_aws():
        sqs = boto3.client("sqs")
        url = sqs.create_queue(QueueName="hdfs-events-test-drift-alerts")["QueueUrl"]
        calls: list[int] = []
        sqs.meta.events.register("provide-client-params.sqs.SendMessageBatch",
                                 lambda params, **_: calls.append(len(params["Entries"])))
        yield {"sqs": sqs, "url": url, "batches": calls,
               "cloudwatch": boto3.client("cloudwatch")}


def drained(sqs: Any, url: str) -> list[PathDrift | DriftSummary]:
    out = []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        out += [parse_alert(m["Body"]) for m in messages]
        sqs.delete_message_batch(QueueUrl=url, Entries=[
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)])
    return out


def verify(aws: dict[str, Any], hdfs: list[Any], index: list[IndexedEntry], *,
           max_paths: int = 1000, client: Any = None) -> tuple[int, DriftAlertSender, str]:
    sender = DriftAlertSender(aws["url"], new_run(C, clock=lambda: 1_764_000_000),
                              client or aws["sqs"], max_paths=max_paths, sleep=lambda s: None)
    out = io.StringIO()
    code = check(C, ["/d"], lister=ListingDouble(hdfs), reader=DictIndex(index), threshold=0,
                 topic_arn=None, workers=2, cloudwatch=aws["cloudwatch"], out=out,
                 drift_alerts=sender)
    return code, sender, out.getvalue()


def test_each_drifting_path_is_one_message_with_what_differs(aws: dict[str, Any]) -> None:
    hdfs = [dir_entry("/d"), file_entry("/d/a", size=10), file_entry("/d/grown", size=50),
            file_entry("/d/only-in-hdfs"), file_entry("/d/touched", mtime=9)]
    index = [indexed(hdfs[0]), indexed(hdfs[1]), indexed(hdfs[2], size=40, last_txid=120),
             indexed(hdfs[4], mtime=8), IndexedEntry("/d/only-in-index", "FILE", 3, 3, 130)]
    code, sender, out = verify(aws, hdfs, index)
    assert code == 1  # drift above threshold 0, as without alerts
    got = {a.path: a for a in drained(aws["sqs"], aws["url"])}
    assert sorted(got) == ["/d/grown", "/d/only-in-hdfs", "/d/only-in-index", "/d/touched"]
    grown = got["/d/grown"]
    assert (grown.drift, grown.hdfs, grown.index, grown.index_txid) == ("size", 50, 40, 120)
    assert (got["/d/touched"].drift, got["/d/touched"].hdfs, got["/d/touched"].index) == (
        "mtime", 9, 8)
    assert got["/d/only-in-hdfs"].drift == "missing"
    # the highest txid the index entries compared before it had reached
    assert got["/d/only-in-hdfs"].index_txid in (100, 120, 130)
    assert (got["/d/only-in-index"].drift, got["/d/only-in-index"].hdfs) == ("extra", None)
    assert {(a.cluster, a.prefix, a.run_id, a.run_time) for a in got.values()} == {
        (C, "/d", sender.run.run_id, "2025-11-24T16:00:00Z")}
    assert f"drift alerts: 4 sent to {aws['url']}" in out


def test_no_drift_sends_nothing(aws: dict[str, Any]) -> None:
    hdfs = [dir_entry("/d"), file_entry("/d/a")]
    code, sender, _ = verify(aws, hdfs, [indexed(e) for e in hdfs])
    assert code == 0 and sender.sent == 0
    assert aws["batches"] == [] and drained(aws["sqs"], aws["url"]) == []


def test_alerts_go_ten_to_a_batch(aws: dict[str, Any]) -> None:
    hdfs = [dir_entry("/d"), *(file_entry(f"/d/f{n:02}") for n in range(25))]
    verify(aws, hdfs, [indexed(hdfs[0])])
    assert aws["batches"] == [10, 10, 5]
    assert len(drained(aws["sqs"], aws["url"])) == 25


def test_past_the_cap_one_summary_says_how_many_more(aws: dict[str, Any]) -> None:
    hdfs = [dir_entry("/d"), *(file_entry(f"/d/f{n:02}") for n in range(25))]
    _, sender, out = verify(aws, hdfs, [indexed(hdfs[0])], max_paths=12)
    alerts = drained(aws["sqs"], aws["url"])
    paths = sorted(a.path for a in alerts if isinstance(a, PathDrift))
    assert paths == [f"/d/f{n:02}" for n in range(12)]
    (summary,) = [a for a in alerts if isinstance(a, DriftSummary)]
    assert (summary.sent, summary.more, summary.run_id) == (12, 13, sender.run.run_id)
    assert "a summary of 13 more" in out


def test_a_cap_of_zero_sends_only_the_summary(aws: dict[str, Any]) -> None:
    hdfs = [dir_entry("/d"), file_entry("/d/a"), file_entry("/d/b")]
    verify(aws, hdfs, [indexed(hdfs[0])], max_paths=0)
    (summary,) = drained(aws["sqs"], aws["url"])
    assert isinstance(summary, DriftSummary) and (summary.sent, summary.more) == (0, 2)


class FailingFirst:
    """The real client, but the first `times` SendMessageBatch responses report their first
    entry failed with `code` (and drop it), as SQS does under internal errors."""

    def __init__(self, sqs: Any, code: str, sender_fault: bool, times: int = 1) -> None:
        self.sqs, self.code, self.fault, self.left = sqs, code, sender_fault, times

    def send_message_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:
        if self.left == 0:
            return self.sqs.send_message_batch(QueueUrl=QueueUrl, Entries=Entries)
        self.left -= 1
        response = (self.sqs.send_message_batch(QueueUrl=QueueUrl, Entries=Entries[1:])
                    if len(Entries) > 1 else {"Successful": []})
        response["Failed"] = [{"Id": Entries[0]["Id"], "Code": self.code,
                               "SenderFault": self.fault, "Message": "planted"}]
        return response


def test_an_entry_sqs_failed_is_sent_again_once(aws: dict[str, Any]) -> None:
    hdfs = [dir_entry("/d"), *(file_entry(f"/d/f{n}") for n in range(3))]
    client = FailingFirst(aws["sqs"], "InternalError", sender_fault=False)
    code, sender, _ = verify(aws, hdfs, [indexed(hdfs[0])], client=client)
    assert code == 1 and sender.sent == 3
    assert sorted(a.path for a in drained(aws["sqs"], aws["url"])) == ["/d/f0", "/d/f1", "/d/f2"]


def test_a_refused_alert_fails_verify_naming_the_queue_and_code(
        aws: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    hdfs = [dir_entry("/d"), file_entry("/d/a")]
    index = [indexed(e) for e in hdfs]
    client = FailingFirst(aws["sqs"], "InvalidParameterValue", sender_fault=True)
    code, _, _ = verify(aws, [*hdfs, file_entry("/d/b")], index, client=client)
    assert code == 1
    err = capsys.readouterr().err
    assert f"drift alerts: {aws['url']} refused a drift alert: InvalidParameterValue" in err
    # verify still published its metric, the comparison's result
    stats = aws["cloudwatch"].list_metrics(MetricName="IndexDrift")["Metrics"]
    assert stats


def test_drift_within_threshold_still_alerts_each_path_and_exits_0(aws: dict[str, Any]) -> None:
    hdfs = [dir_entry("/d"), file_entry("/d/a")]
    sender = DriftAlertSender(aws["url"], new_run(C), aws["sqs"], max_paths=10)
    code = check(C, ["/d"], lister=ListingDouble(hdfs), reader=DictIndex([indexed(hdfs[0])]),
                 threshold=5, topic_arn=None, workers=1, cloudwatch=aws["cloudwatch"],
                 out=io.StringIO(), drift_alerts=sender)
    assert code == 0
    assert [a.path for a in drained(aws["sqs"], aws["url"])] == ["/d/a"]


def live_settings(**verify: Any) -> Any:
    from pathlib import Path

    from onprem_agent.config import parse_config
    from onprem_agent.live.settings import load_live_settings

    doc = {"cluster": C, "sqs": {"queue_url": "https://sqs.eu-west-1.amazonaws.com/1/q.fifo"},
           "checkpoint": {"store": "dynamodb", "table": "state"}, "verify": verify}
    return load_live_settings(parse_config(doc, Path("/etc/hdfs-events/agent.toml"))).verify


def test_without_a_queue_verify_sends_no_alerts_and_the_cap_is_1000() -> None:
    assert live_settings().drift_queue_url is None
    assert live_settings(drift_queue_url="").drift_queue_url is None
    assert live_settings().alert_max_paths == 1000


@pytest.mark.parametrize(("verify", "message"), [
    ({"drift_queue_url": "hdfs-events-prod-drift-alerts"},
     "[verify] drift_queue_url: must be an SQS queue URL"),
    ({"drift_queue_url": "https://sqs.eu-west-1.amazonaws.com/1/hdfs-events.fifo"},
     "[verify] drift_queue_url: must be the standard drift alert queue"),
    ({"alert_max_paths": -1}, "[verify] alert_max_paths: must be >= 0"),
    ({"alert_max_paths": 2_000_000}, "[verify] alert_max_paths: must be <= 1000000"),
])
def test_drift_alert_mistakes_name_the_key(verify: dict[str, Any], message: str) -> None:
    from onprem_agent.agent_toml import ConfigError

    with pytest.raises(ConfigError) as info:
        live_settings(**verify)
    assert str(info.value).startswith("agent.toml: ") and message in str(info.value)
