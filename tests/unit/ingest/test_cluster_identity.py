"""A cluster's events are accepted only from that cluster's principal, in its own groups."""

from __future__ import annotations

import json

import boto3
from moto import mock_aws

from hdfs_events import names
from lambdas.ingest import handler
from lambdas.ingest.iam_users import IamUsers
from lambdas.ingest.senders import ClusterSenders, resolve_senders
from tests.kit.ingest_aws import emf_documents, log_lines
from tests.kit.ingest_builders import manifests, pack, sample_events
from tests.kit.lambda_events import AGENT_SENDER_IDS, Context, Sent, event, record

PROD, DEV = AGENT_SENDER_IDS["prod"], AGENT_SENDER_IDS["dev"]


def _quarantine_reasons(aws) -> dict[str, str]:
    return {json.loads(aws.get(k))["message_id"]: json.loads(aws.get(k))["reason"]
            for k in aws.lake_keys("quarantine/")}


def test_cluster_a_principal_sending_cluster_b_events_is_quarantined_and_alarmed(
        aws, capsys, logs) -> None:
    """dev's agent credentials send prod's events (and a prod manifest naming them); prod's
    own agent sends the same events in the same batch. Only prod's own reach the lake."""
    events = sample_events("prod")[:6]
    own = pack(events, per_message=3, strategy="single")
    forged = [Sent(body=s.body, encoding=s.encoding, group_id=s.group_id,
                   dedup_id=s.dedup_id + "-forged", message_id=f"forged-{i}")
              for i, s in enumerate(own)]
    (forged_manifest,) = manifests(forged)
    forged_manifest = Sent(body=forged_manifest.body, encoding=None,
                           group_id=forged_manifest.group_id, dedup_id="forged-manifest",
                           message_id="forged-manifest", kind="manifest")
    batch = {"Records": [record(s, sender_id=DEV) for s in [*forged, forged_manifest]]
             + [record(s, sender_id=PROD) for s in own]}

    assert handler.handler(batch, Context()) == {"batchItemFailures": []}

    reasons = _quarantine_reasons(aws)
    assert set(reasons) == {"forged-0", "forged-1", "forged-manifest"}
    for reason in reasons.values():
        assert reason == (f"sender '{DEV}' may not send events of cluster 'prod': it is the "
                          "principal of cluster(s) ['dev']")
    raw = aws.lake_keys("raw/")
    assert raw and not any("forged" in k for k in raw)  # prod's own went through
    out = capsys.readouterr().out
    foreign = [d for d in emf_documents(out) if names.METRIC_FOREIGN_SENDER in d]
    assert sum(d[names.METRIC_FOREIGN_SENDER][0] for d in foreign
               if d[names.DIMENSION_CLUSTER] == "prod") == 3
    alerts = [line for line in log_lines(out) if line["level"] == "ERROR"]
    assert {line["sender_id"] for line in alerts} == {DEV}
    assert {line["cluster"] for line in alerts} == {"prod"}


def test_own_events_in_another_clusters_group_are_quarantined(aws) -> None:
    (sent,) = pack(sample_events("prod")[:2], strategy="single")
    elsewhere = Sent(body=sent.body, encoding=sent.encoding, group_id="dev:/",
                     dedup_id=sent.dedup_id, message_id="wrong-group")
    assert handler.handler({"Records": [record(elsewhere, sender_id=PROD)]}, Context()) == {
        "batchItemFailures": []}
    assert _quarantine_reasons(aws) == {
        "wrong-group": "message group 'dev:/' is not one of cluster 'prod''s groups "
                       "('prod:...')"}
    assert aws.lake_keys("raw/") == []


def test_a_role_session_is_its_roles_and_an_unknown_sender_is_nobodys() -> None:
    senders = ClusterSenders({"prod": frozenset({"AROAEXAMPLEROLEID0001"}),
                              "dev": frozenset({DEV})})
    assert senders.problem("prod", "AROAEXAMPLEROLEID0001:2d1b0c9a3f", "prod:/data") is None
    assert senders.problem("prod", "AROAOTHERROLEID000001:x", "prod:/data") == (
        "sender 'AROAOTHERROLEID000001' may not send events of cluster 'prod': it is not the "
        "principal of any cluster")
    assert "no SenderId" in senders.problem("prod", None, "prod:/data")
    assert not senders.allows("prod", DEV) and senders.allows("dev", DEV)


def test_a_message_without_sender_id_is_quarantined(aws) -> None:
    (sent,) = pack(sample_events("prod")[:2], strategy="single")
    rec = record(sent)
    del rec["attributes"]["SenderId"]
    assert handler.handler({"Records": [rec]}, Context()) == {"batchItemFailures": []}
    (reason,) = _quarantine_reasons(aws).values()
    assert reason == "message has no SenderId attribute: its sender cannot be checked"


def test_user_arns_resolve_to_the_users_unique_ids_through_iam() -> None:
    with mock_aws():
        iam = boto3.client("iam")
        user = iam.create_user(UserName="hdfs-events-prod-agent-prod")["User"]
        senders = resolve_senders({"prod": (user["Arn"], "AROAEXAMPLEROLEID0001")},
                                  IamUsers(iam).unique_id)
    assert senders.principals == {"prod": frozenset({user["UserId"], "AROAEXAMPLEROLEID0001"})}
    assert senders.problem("prod", user["UserId"], "prod:/data") is None


def test_the_handler_resolves_configured_user_arns_once(aws, monkeypatch) -> None:
    user = boto3.client("iam").create_user(UserName="hdfs-events-dev-agent-prod")["User"]
    monkeypatch.setenv(names.ENV_CLUSTER_SENDERS, json.dumps({"prod": [user["Arn"]]}))
    handler.consumer.cache_clear()
    (sent,) = pack(sample_events("prod")[:2], strategy="single")
    ok = handler.handler({"Records": [record(sent, sender_id=user["UserId"])]}, Context())
    assert ok == {"batchItemFailures": []} and aws.lake_keys("raw/")
    assert aws.lake_keys("quarantine/") == []


def test_continue_requests_carry_no_events_and_are_not_checked_for_a_sender(aws) -> None:
    # The wire values of a continue request (hdfs_events/continue_request.py) as SQS delivers it.
    request = Sent(body=json.dumps({"cluster": "prod"}), encoding=None, group_id="prod:#drain",
                   dedup_id="prod-drain-start", message_id="continue-1", kind="drain")
    assert handler.handler(event(request), Context()) == {"batchItemFailures": []}
    assert aws.lake_keys("quarantine/") == []
