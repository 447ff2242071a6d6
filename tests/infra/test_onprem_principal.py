"""The on-prem principal: exactly its permissions, its own cluster's items, no long-lived secret
in an output, and Roles Anywhere beside the IAM user."""

from __future__ import annotations

import json

import pytest

from hdfs_events import names
from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.slow

# The list, plus what the return channel (transfers status) and `verify` (index reads of
# the own cluster) need; KMS Decrypt only when the lake uses a KMS key.
EXPECTED_ACTIONS = {
    "sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility",
    "s3:GetObject", "s3:ListBucket", "dynamodb:GetItem", "dynamodb:PutItem",
    "dynamodb:UpdateItem", "dynamodb:Query", "cloudwatch:PutMetricData",
}


def _actions(statement: dict) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else action


def _resources(statement: dict) -> list:
    resource = statement["Resource"]
    return resource if isinstance(resource, list) else [resource]


def _principal_policies(s: Synthesized) -> dict[str, dict]:
    return {k: r for k, r in s.resources("Ingest", "AWS::IAM::ManagedPolicy").items()
            if r["Properties"]["ManagedPolicyName"].startswith(f"hdfs-events-{s.env}-onprem-")}


def _statements(s: Synthesized) -> list[dict]:
    (policy,) = _principal_policies(s).values()
    return policy["Properties"]["PolicyDocument"]["Statement"]


def test_no_wildcard_action_and_no_wildcard_resource_but_put_metric_data(
        deployed_env: Synthesized) -> None:
    for statement in _statements(deployed_env):
        assert statement["Effect"] == "Allow"
        for action in _actions(statement):
            assert "*" not in action, statement
        for resource in _resources(statement):
            if resource == "*":
                # PutMetricData has no resource-level permissions; the namespace condition is
                # what scopes it.
                assert _actions(statement) == ["cloudwatch:PutMetricData"]
                assert statement["Condition"] == {
                    "StringEquals": {"cloudwatch:namespace": names.METRICS_NAMESPACE}}
            else:
                rendered = json.dumps(resource)
                assert not rendered.endswith(':*"') and '"*"' not in rendered, statement


def test_permissions_are_exactly_the_agent_and_copy_worker_needs(dev: Synthesized,
                                                                 prod: Synthesized) -> None:
    assert {a for s in _statements(dev) for a in _actions(s)} == EXPECTED_ACTIONS
    assert {a for s in _statements(prod) for a in _actions(s)} == EXPECTED_ACTIONS | {
        "kms:Decrypt"}
    (decrypt,) = [s for s in _statements(prod) if "kms:Decrypt" in _actions(s)]
    assert "kms:ViaService" in json.dumps(decrypt["Condition"])


def test_each_permission_names_its_resource(dev: Synthesized) -> None:
    by_sid = {s["Sid"]: s for s in _statements(dev)}
    assert "EventsQueue" in json.dumps(by_sid["ShipEvents"]["Resource"])
    assert _actions(by_sid["ShipEvents"]) == ["sqs:SendMessage"]
    assert "CopyRequestsQueue" in json.dumps(by_sid["TakeCopyRequests"]["Resource"])
    assert json.dumps(by_sid["ReadExports"]["Resource"]).endswith('"/exports/*"]]}')
    assert by_sid["ListExports"]["Condition"] == {
        "StringLike": {"s3:prefix": ["exports/", "exports/*"]}}
    assert "StateTable" in json.dumps(by_sid["OwnAgentState"]["Resource"])
    assert "TransfersTable" in json.dumps(by_sid["TrackTransfers"]["Resource"])
    assert "IndexTable" in json.dumps(by_sid["VerifyOwnIndex"]["Resource"])


def test_agent_state_is_limited_to_its_own_cluster_by_leading_keys(
        deployed_env: Synthesized) -> None:
    cluster = "prod" if deployed_env.env == "prod" else "dev"  # clusters of cdk.json
    by_sid = {s["Sid"]: s for s in _statements(deployed_env)}
    assert by_sid["OwnAgentState"]["Condition"] == {
        "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [cluster]}}
    assert by_sid["VerifyOwnIndex"]["Condition"] == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{cluster}#*"]}}


def test_user_and_roles_anywhere_role_hold_only_this_policy(deployed_env: Synthesized) -> None:
    (policy_id,) = _principal_policies(deployed_env)
    (user,) = deployed_env.resources("Ingest", "AWS::IAM::User").values()
    assert user["Properties"]["ManagedPolicyArns"] == [{"Ref": policy_id}]
    roles = [r for r in deployed_env.resources("Ingest", "AWS::IAM::Role").values()
             if "rolesanywhere" in json.dumps(r["Properties"]["AssumeRolePolicyDocument"])]
    assert len(roles) == 1
    assert roles[0]["Properties"]["ManagedPolicyArns"] == [{"Ref": policy_id}]
    # No inline policy is attached to the user or the role.
    for inline in deployed_env.resources("Ingest", "AWS::IAM::Policy").values():
        assert "Users" not in inline["Properties"]
        assert "Roles Anywhere" not in json.dumps(inline)


def test_roles_anywhere_trusts_only_the_anchor_and_the_clusters_cn(dev: Synthesized) -> None:
    (anchor_id,) = dev.resources("Ingest", "AWS::RolesAnywhere::TrustAnchor")
    anchor = dev.templates["Ingest"]["Resources"][anchor_id]["Properties"]
    assert anchor["Source"]["SourceType"] == "CERTIFICATE_BUNDLE"
    # No CA configured in cdk.json: the placeholder (its key destroyed), disabled.
    assert anchor["Enabled"] is False
    (role_id, role), = [(k, r) for k, r in dev.resources("Ingest", "AWS::IAM::Role").items()
                        if "rolesanywhere" in json.dumps(r["Properties"])]
    statements = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert {a for s in statements for a in _actions(s)} == {
        "sts:AssumeRole", "sts:TagSession", "sts:SetSourceIdentity"}
    for s in statements:
        assert s["Condition"]["ArnEquals"]["aws:SourceArn"] == {
            "Fn::GetAtt": [anchor_id, "TrustAnchorArn"]}
        assert s["Condition"]["StringEquals"] == {
            "aws:PrincipalTag/x509Subject/CN": "hdfs-events-dev-agent-dev"}
    dev.template("Ingest").has_resource_properties("AWS::RolesAnywhere::Profile", {
        "RoleArns": [{"Fn::GetAtt": [role_id, "Arn"]}], "Enabled": True})


def test_access_key_goes_to_secrets_manager_and_never_to_an_output(
        deployed_env: Synthesized) -> None:
    (key_id,) = deployed_env.resources("Ingest", "AWS::IAM::AccessKey")
    (secret,) = deployed_env.resources("Ingest", "AWS::SecretsManager::Secret").values()
    assert {"Fn::GetAtt": [key_id, "SecretAccessKey"]} in json.loads(
        json.dumps(secret["Properties"]["SecretString"]["Fn::Join"][1]))
    for concern, template in deployed_env.templates.items():
        assert "SecretAccessKey" not in json.dumps(template.get("Outputs", {})), concern
    outputs = deployed_env.templates["Ingest"]["Outputs"]
    assert any(k.startswith("AgentAccessKeySecretArn") for k in outputs)


def test_event_queue_denies_sending_to_every_other_principal(deployed_env: Synthesized) -> None:
    denies = [s for p in deployed_env.resources("Ingest", "AWS::SQS::QueuePolicy").values()
              for s in p["Properties"]["PolicyDocument"]["Statement"]
              if s["Effect"] == "Deny" and s["Action"] == "sqs:SendMessage"]
    assert len(denies) == 1
    deny = denies[0]
    assert deny["Principal"] == {"AWS": "*"}
    assert "EventsQueue" in json.dumps(deny["Resource"])
    allowed = deny["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]
    rendered = json.dumps(allowed)
    # The agent's user and Roles Anywhere role, and the consumer (continuation messages).
    assert len(allowed) == 3
    assert "User" in rendered and "ConsumerRole" in rendered and "Role" in rendered
