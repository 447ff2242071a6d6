"""Every AWS call a component's code can make is granted to its principal by the policy that
ships, on the resource the call reaches, and every grant has a caller (tests/infra/aws_calls.py
reads the calls from the code).

How exact the resource check is: a table, queue, topic or key by the logical id the statement's
ARN refers to (a table statement must name that table, not another); a lake call by the key
prefix (an object grant "<lake>/<prefix>*" covering it, a listing grant on the lake bucket whose
s3:prefix condition admits it); a sync destination by bucket and prefix from cdk.json. Conditions
other than s3:prefix and the metrics namespace (leading keys, kms:ViaService) are checked by
test_onprem_principal.py, not here.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest

from hdfs_events import lake_layout, names
from stacks.settings import DeploySettings, load_settings
from tests.infra import aws_calls
from tests.infra.aws_calls import Need, Target
from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.slow

Statement = dict[str, Any]


def _settings(env: str) -> DeploySettings:
    context = json.loads((aws_calls.REPO / "cdk.json").read_text())["context"]
    return load_settings(context, env)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _rendered(value: Any) -> str:
    """An ARN with references as `${...}`, so names and logical ids can be matched."""
    if isinstance(value, dict) and "Fn::Join" in value:
        return "".join(_rendered(p) for p in value["Fn::Join"][1])
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return "${" + value["Ref"] + "}"
    if isinstance(value, dict):
        return "${" + json.dumps(value) + "}"
    return str(value)


# --- which statements each principal holds ---------------------------------------------------

def _managed(s: Synthesized, concern: str, name: str) -> list[Statement]:
    (policy,) = [r for r in s.resources(concern, "AWS::IAM::ManagedPolicy").values()
                 if r["Properties"]["ManagedPolicyName"] == name]
    return policy["Properties"]["PolicyDocument"]["Statement"]


def _role_policy(s: Synthesized, concern: str, role_prefix: str) -> list[Statement]:
    """The statements CDK gathers in the role's default policy (its only inline policy)."""
    found = [st for r in s.resources(concern, "AWS::IAM::Policy").values()
             if any(ref.get("Ref", "").startswith(role_prefix) for ref in r["Properties"]["Roles"])
             for st in r["Properties"]["PolicyDocument"]["Statement"]]
    assert found, role_prefix
    return found


def _onprem_policy(s: Synthesized, cluster: str) -> list[Statement]:
    return _managed(s, "Ingest", f"hdfs-events-{s.env}-onprem-{cluster}")


def _alert_policy(s: Synthesized, cluster: str) -> list[Statement]:
    return _managed(s, "Monitoring", f"hdfs-events-{s.env}-onprem-{cluster}-alerts")


# principal -> (its statements, its needs), for one environment
Principal = Callable[[Synthesized], tuple[list[Statement], list[Need]]]


def _needs(component: str, s: Synthesized, cluster: str | None = None,
           use: str | None = None) -> list[Need]:
    settings = _settings(s.env)
    if use is None:
        needs = aws_calls.needs_of(component, lake_kms=settings.lake_kms)
    else:
        calls = [c for c in aws_calls.calls_of(component) if aws_calls.cli_use(c) == use]
        needs = aws_calls.code_needs(calls)
        needs += [i for n in needs for i in aws_calls.implied(n, lake_kms=settings.lake_kms)]
    out = []
    for need in needs:
        # A call on several lake prefixes needs each; the export prefixes and the cluster's
        # sync destinations come from cdk.json (a cluster with no destination cannot sync).
        if need.target.kind == "exports":
            prefixes = settings.export_prefixes
            out += [Need(need.action, Target("lake", (p,)), need.why) for p in prefixes]
        elif need.target.kind == "replica":
            out += [Need(need.action, Target(f"replica:{bucket}", (prefix,)), need.why)
                    for bucket, prefix in settings.sync_destinations_of(cluster or "")]
        elif need.target.kind == "lake":
            out += [Need(need.action, Target("lake", (p,)), need.why)
                    for p in need.target.prefixes]
        elif need.target.kind == "audit":
            out.append(Need(need.action, Target(
                "lake", (lake_layout.audit_cluster_prefix(cluster or ""),)), need.why))
        elif need.target.kind == "fsimage":
            out.append(Need(need.action, Target(
                "lake", (lake_layout.fsimage_cluster_prefix(cluster or ""),)), need.why))
        elif need.target.kind == "CopyQueue":
            queue = "CopyRequests" + re.sub(r"[^A-Za-z0-9]", "", cluster or "") + "Queue"
            out.append(Need(need.action, Target(queue), need.why))
        else:
            out.append(need)
    return out


def principals(s: Synthesized) -> dict[str, tuple[list[Statement], list[Need]]]:
    found = {
        "consumer": (_role_policy(s, "Ingest", "ConsumerRole"), _needs("consumer", s)),
        "glue": (_role_policy(s, "Analytics", "JobRole"), _needs("glue", s)),
        "cli-read": (_managed(s, "Ingest", f"hdfs-events-{s.env}-operator-read"),
                     _needs("cli", s, use="read")),
        "cli-redrive": (_managed(s, "Ingest", f"hdfs-events-{s.env}-quarantine-redrive"),
                        _needs("cli", s, use="redrive")),
        "cli-lake-query": (_managed(s, "Ingest", f"hdfs-events-{s.env}-lake-query"),
                           _needs("cli", s, use="lake-query")),
    }
    for cluster in _settings(s.env).clusters:
        found[f"onprem-{cluster}"] = (_onprem_policy(s, cluster) + _alert_policy(s, cluster),
                                      _needs("onprem", s, cluster))
        found[f"cli-submit-{cluster}"] = (
            _managed(s, "Ingest", f"hdfs-events-{s.env}-copy-submit-{cluster}"),
            _needs("cli", s, cluster, use="submit"))
    return found


# --- does a statement grant a need ------------------------------------------------------------

def _names_target(statement: Statement, resource: str, action: str, target: Target,
                  env: str) -> bool:
    kind = target.kind
    if kind in ("lake", "LakeKey") or kind.startswith("replica:"):
        if kind == "LakeKey":
            return "LakeKey" in resource
        bucket = (f":s3:::hdfs-events-{env}-lake-${{AWS::AccountId}}-${{AWS::Region}}"
                  if kind == "lake" else f":s3:::{kind.split(':', 1)[1]}")
        (prefix,) = target.prefixes
        if action in aws_calls.BUCKET_ACTIONS:
            if not resource.endswith(bucket):
                return False
            allowed = statement.get("Condition", {}).get("StringLike", {}).get("s3:prefix")
            return allowed is None or any(fnmatchcase(prefix, p) for p in _list(allowed))
        start = resource.find(bucket + "/")
        granted = resource[start + len(bucket) + 1:]
        return start >= 0 and (granted == prefix or (granted.endswith("*")
                                                     and prefix.startswith(granted[:-1])))
    if kind == "metrics":
        return resource == "*" and statement.get("Condition") == {
            "StringEquals": {"cloudwatch:namespace": names.METRICS_NAMESPACE}}
    if kind == "any":
        return resource == "*"
    if kind == "AgentUsers":
        return "OnPrem" in resource and "User" in resource
    if kind == "GlueTables":
        return ":table/" in resource and "/${EventsTable" in resource
    if kind == "GlueLogs":
        return resource.endswith(":log-group:/aws-glue/*")
    if kind == "Assets":
        return "cdk-hnb659fds-assets-" in resource
    if kind == "AlertTopic":
        return resource.startswith("${Alerts")
    # a table, queue, key or log group by its logical id (a table's, not its indexes')
    return kind in resource and "/index/" not in resource


def grants(statement: Statement, need: Need, env: str) -> bool:
    if statement["Effect"] != "Allow" or not any(
            fnmatchcase(need.action, a) for a in _list(statement["Action"])):
        return False
    return any(_names_target(statement, _rendered(r), need.action, need.target, env)
               for r in _list(statement["Resource"]))


def check(statements: list[Statement], needs: list[Need],
          env: str) -> tuple[list[Need], list[tuple[str, str]]]:
    """(needs no statement grants, (statement, action) grants no need uses)."""
    missing = [n for n in needs if not any(grants(s, n, env) for s in statements)]
    unused = []
    for i, statement in enumerate(statements):
        for action in _list(statement["Action"]):
            narrowed = {**statement, "Action": action}
            if not any(grants(narrowed, n, env) for n in needs):
                unused.append((statement.get("Sid") or f"statement {i}", action))
    return missing, unused


# --- the tests --------------------------------------------------------------------------------

def test_the_scan_finds_the_calls_we_know() -> None:
    # Guards the checks below: a scan that found nothing would make them pass vacuously.
    def found(component: str) -> set[str]:
        return {f"{c.service}:{c.operation}" for c in aws_calls.calls_of(component)}

    assert {"sqs:SendMessageBatch", "dynamodb:GetItem", "dynamodb:Query",
            "dynamodb:DescribeTable", "sqs:GetQueueAttributes", "sts:GetCallerIdentity",
            "s3:ListMultipartUploads", "s3:UploadPartCopy", "sns:Publish",
            "cloudwatch:PutMetricData", "sqs:ReceiveMessage"} <= found("onprem")
    assert {"dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "s3:PutObject", "s3:GetObject",
            "sqs:SendMessage", "iam:GetUser"} <= found("consumer")
    assert {"glue:GetPartitions", "glue:BatchCreatePartition", "glue:BatchUpdatePartition",
            "s3:ListObjectsV2", "s3:DeleteObjects"} <= found("glue")
    assert {"dynamodb:BatchGetItem", "sqs:SendMessage", "s3:ListObjectsV2",
            "lambda:Invoke"} <= found("cli")
    # `verify` of a prefix other than `/` reads the prefix's own entry
    assert any(c.module == "onprem_agent/verify.py" and c.operation == "GetItem"
               for c in aws_calls.calls_of("onprem"))
    # our own methods named like an operation are not taken for AWS calls
    assert not any(c.module == "onprem_agent/copy_worker/worker.py" and c.service == "sns"
                   for c in aws_calls.calls_of("onprem"))


def _scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> list[str]:
    (tmp_path / "pkg").mkdir(parents=True, exist_ok=True)
    (tmp_path / "pkg" / "m.py").write_text(source)
    monkeypatch.setattr(aws_calls, "REPO", tmp_path)
    monkeypatch.setitem(aws_calls.COMPONENTS, "probe", ("pkg/*.py",))
    aws_calls.calls_of.cache_clear()
    try:
        return [f"{c.service}:{c.operation}" for c in aws_calls.calls_of("probe")]
    finally:
        aws_calls.calls_of.cache_clear()


def test_a_name_two_services_share_must_be_resolved(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    source = ('import boto3\nglue, ddb = boto3.client("glue"), boto3.client("dynamodb")\n'
              'ddb.create_table(TableName="t")\n')
    with pytest.raises(AssertionError, match="create_table is an operation of"):
        _scan(tmp_path, monkeypatch, source)
    monkeypatch.setitem(aws_calls.AMBIGUOUS, ("pkg/m.py", "create_table"), "dynamodb")
    assert _scan(tmp_path, monkeypatch, source) == ["dynamodb:CreateTable"]


def test_a_method_of_ours_named_like_an_operation_must_be_classified(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = ('import boto3\nsns = boto3.client("sns")\n'
              'class Outcome:\n    def publish(self) -> None:\n        sns.publish(Message="m")\n'
              'Outcome().publish()\n')
    with pytest.raises(AssertionError, match="classify it in SAME_NAME"):
        _scan(tmp_path, monkeypatch, source)
    monkeypatch.setitem(aws_calls.SAME_NAME, ("pkg/m.py", "publish"), False)
    assert _scan(tmp_path, monkeypatch, source) == []


def test_operations_map_to_their_iam_actions() -> None:
    assert aws_calls.actions_of("s3", "ListObjectsV2") == ("s3:ListBucket",)
    assert aws_calls.actions_of("s3", "UploadPartCopy") == ("s3:GetObject", "s3:PutObject")
    assert aws_calls.actions_of("sqs", "SendMessageBatch") == ("sqs:SendMessage",)
    assert aws_calls.actions_of("sts", "GetCallerIdentity") == ()
    assert aws_calls.actions_of("lambda", "Invoke") == ("lambda:InvokeFunction",)
    assert aws_calls.actions_of("dynamodb", "DescribeTable") == ("dynamodb:DescribeTable",)


def test_every_call_is_granted_on_its_resource_and_every_grant_has_a_caller(
        deployed_env: Synthesized) -> None:
    for principal, (statements, needs) in principals(deployed_env).items():
        assert needs, principal
        missing, unused = check(statements, needs, deployed_env.env)
        assert not missing, (principal, [(n.action, n.target, n.why) for n in missing])
        assert not unused, (principal, unused)


def test_a_sync_destination_is_granted_exactly_what_sync_calls(local: Synthesized) -> None:
    # dev and prod ship no sync destination; local has one (cdk.json).
    statements, needs = principals(local)["onprem-demo"]
    assert any(n.target.kind.startswith("replica:") for n in needs)
    assert check(statements, needs, local.env) == ([], [])


# Each (policy, statement, action) of the on-prem principal as shipped; the test below removes
# each in turn. test_the_list_is_the_shipped_policy keeps this list honest.
ONPREM_GRANTS = [
    ("onprem", "ShipEvents", "sqs:SendMessage"),
    ("onprem", "CheckEventQueue", "sqs:GetQueueAttributes"),
    ("onprem", "SendDriftAlerts", "sqs:SendMessage"),
    ("onprem", "TakeCopyRequests", "sqs:ReceiveMessage"),
    ("onprem", "TakeCopyRequests", "sqs:DeleteMessage"),
    ("onprem", "TakeCopyRequests", "sqs:ChangeMessageVisibility"),
    ("onprem", "ReadExports", "s3:GetObject"),
    ("onprem", "ListExports", "s3:ListBucket"),
    ("onprem", "OwnAgentState", "dynamodb:GetItem"),
    ("onprem", "OwnAgentState", "dynamodb:UpdateItem"),
    ("onprem", "DescribeStateTable", "dynamodb:DescribeTable"),
    ("onprem", "OwnSyncState", "dynamodb:GetItem"),
    ("onprem", "OwnSyncState", "dynamodb:PutItem"),
    ("onprem", "OwnSyncState", "dynamodb:UpdateItem"),
    ("onprem", "OwnSyncState", "dynamodb:DeleteItem"),
    ("onprem", "OwnSyncState", "dynamodb:Query"),
    ("onprem", "TrackOwnTransfers", "dynamodb:GetItem"),
    ("onprem", "TrackOwnTransfers", "dynamodb:UpdateItem"),
    ("onprem", "VerifyOwnIndex", "dynamodb:GetItem"),
    ("onprem", "VerifyOwnIndex", "dynamodb:Query"),
    ("onprem", "ShipAuditLog", "s3:PutObject"),
    ("onprem", "ShipFsImage", "s3:PutObject"),
    ("onprem", "ShipFsImage", "s3:GetObject"),
    ("onprem", "ShipFsImage", "s3:AbortMultipartUpload"),
    ("onprem", "ListOwnFsImages", "s3:ListBucket"),
    ("onprem", "IndexFromOwnImage", "glue:StartJobRun"),
    ("onprem", "IndexFromOwnImage", "glue:GetJobRuns"),
    ("onprem", "IndexFromOwnImage", "glue:GetJobRun"),
    ("onprem", "PublishAgentMetrics", "cloudwatch:PutMetricData"),
    ("onprem", "DecryptExports", "kms:Decrypt"),  # prod only: its lake is KMS-encrypted
    ("onprem", "EncryptAuditLog", "kms:GenerateDataKey"),  # prod only, as DecryptExports
    ("alerts", "PublishAlerts", "sns:Publish"),
    ("alerts", "EncryptAlerts", "kms:GenerateDataKey"),
    ("alerts", "EncryptAlerts", "kms:Decrypt"),
]


# Grants on the lake's KMS key: only an environment with a KMS-encrypted lake (prod) has them.
_LAKE_KEY_SIDS = ("DecryptExports", "EncryptAuditLog")


def _onprem_statements(s: Synthesized) -> tuple[str, dict[str, list[Statement]]]:
    (cluster,) = _settings(s.env).clusters
    return cluster, {"onprem": _onprem_policy(s, cluster), "alerts": _alert_policy(s, cluster)}


def test_the_list_is_the_shipped_policy(dev: Synthesized, prod: Synthesized) -> None:
    for s in (dev, prod):
        _, policies = _onprem_statements(s)
        shipped = {(p, st["Sid"], a) for p, sts in policies.items() for st in sts
                   for a in _list(st["Action"])}
        expected = {g for g in ONPREM_GRANTS if s.env == "prod" or g[1] not in _LAKE_KEY_SIDS}
        assert shipped == expected, s.env


@pytest.mark.parametrize("grant", ONPREM_GRANTS, ids=lambda g: f"{g[1]}-{g[2]}")
def test_removing_any_onprem_grant_leaves_a_call_denied(
        grant: tuple[str, str, str], deployed_env: Synthesized) -> None:
    policy, sid, action = grant
    cluster, policies = _onprem_statements(deployed_env)
    if sid in _LAKE_KEY_SIDS and deployed_env.env != "prod":
        pytest.skip("dev's lake is SSE-S3: no key to decrypt with")
    policies = copy.deepcopy(policies)
    (statement,) = [st for st in policies[policy] if st["Sid"] == sid]
    statement["Action"] = [a for a in _list(statement["Action"]) if a != action]
    statements = [st for sts in policies.values() for st in sts if st["Action"]]
    needs = _needs("onprem", deployed_env, cluster)
    missing, _ = check(statements, needs, deployed_env.env)
    assert action in {n.action for n in missing}, grant


def test_a_grant_without_a_caller_is_reported(dev: Synthesized) -> None:
    cluster, policies = _onprem_statements(dev)
    statements = [*policies["onprem"], *policies["alerts"], {
        "Sid": "Extra", "Effect": "Allow", "Action": "dynamodb:Scan",
        "Resource": policies["onprem"][0]["Resource"]}]
    _, unused = check(statements, _needs("onprem", dev, cluster), dev.env)
    assert unused == [("Extra", "dynamodb:Scan")]


def test_cli_policies_are_outputs(deployed_env: Synthesized) -> None:
    outputs = deployed_env.templates["Ingest"]["Outputs"]
    assert "OperatorReadPolicyArn" in outputs
    assert "QuarantineRedrivePolicyArn" in outputs
    assert "LakeQueryPolicyArn" in outputs
    for cluster in _settings(deployed_env.env).clusters:
        suffix = "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", cluster))
        assert f"CopySubmitPolicyArn{suffix}" in outputs
