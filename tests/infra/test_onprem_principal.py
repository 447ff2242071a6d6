"""The on-prem principal: exactly its permissions, its own cluster's items, its own alerts to the
alert topic, no long-lived secret in an output, and Roles Anywhere beside the IAM user."""

from __future__ import annotations

import json

import pytest

from hdfs_events import lake_layout, names
from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.slow

# The list, plus what the return channel (transfers status), `verify` (index reads of
# the own cluster) and `doctor` (the queue's attributes, the state table's description) need;
# KMS Decrypt only when the lake uses a KMS key. test_grants_cover_calls.py checks each grant
# against the calls the code makes.
EXPECTED_ACTIONS = {
    "sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes", "s3:GetObject", "s3:ListBucket", "dynamodb:GetItem",
    "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query",
    "dynamodb:DescribeTable", "cloudwatch:PutMetricData",
    "s3:PutObject",  # `audit run`: the NameNode's audit log, own cluster's prefix only
    "s3:AbortMultipartUpload",  # `fetch-image`: a failed upload of the fsimage, own prefix
    # first start from the fsimage: the inventory job's runs, that job only
    "glue:StartJobRun", "glue:GetJobRuns", "glue:GetJobRun",
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
        "kms:Decrypt", "kms:GenerateDataKey"}
    (decrypt,) = [s for s in _statements(prod) if "kms:Decrypt" in _actions(s)]
    assert "kms:ViaService" in json.dumps(decrypt["Condition"])


def test_each_permission_names_its_resource(dev: Synthesized) -> None:
    by_sid = {s["Sid"]: s for s in _statements(dev)}
    assert "EventsQueue" in json.dumps(by_sid["ShipEvents"]["Resource"])
    assert _actions(by_sid["ShipEvents"]) == ["sqs:SendMessage"]
    # its own cluster's copy-request queue (a queue per cluster)
    (queue_id,) = [k for k, q in dev.resources("Ingest", "AWS::SQS::Queue").items()
                   if q["Properties"]["QueueName"] == "hdfs-events-dev-copy-requests-dev"]
    assert by_sid["TakeCopyRequests"]["Resource"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert json.dumps(by_sid["ReadExports"]["Resource"]).endswith('"/exports/*"]]}')
    assert by_sid["ListExports"]["Condition"] == {
        "StringLike": {"s3:prefix": ["exports/", "exports/*"]}}
    assert "StateTable" in json.dumps(by_sid["OwnAgentState"]["Resource"])
    assert "TransfersTable" in json.dumps(by_sid["TrackOwnTransfers"]["Resource"])
    assert "IndexTable" in json.dumps(by_sid["VerifyOwnIndex"]["Resource"])
    (drift_id,) = [k for k, q in dev.resources("Ingest", "AWS::SQS::Queue").items()
                   if q["Properties"]["QueueName"] == "hdfs-events-dev-drift-alerts"]
    assert by_sid["SendDriftAlerts"]["Resource"] == {"Fn::GetAtt": [drift_id, "Arn"]}
    assert _actions(by_sid["SendDriftAlerts"]) == ["sqs:SendMessage"]
    # `doctor`: the event queue's attributes and the state table's description, nothing else
    assert by_sid["CheckEventQueue"]["Resource"] == by_sid["ShipEvents"]["Resource"]
    assert _actions(by_sid["DescribeStateTable"]) == ["dynamodb:DescribeTable"]
    assert by_sid["DescribeStateTable"]["Resource"] == by_sid["OwnAgentState"]["Resource"]


def test_agent_state_is_limited_to_its_own_cluster_by_leading_keys(
        deployed_env: Synthesized) -> None:
    cluster = "prod" if deployed_env.env == "prod" else "dev"  # clusters of cdk.json
    by_sid = {s["Sid"]: s for s in _statements(deployed_env)}
    assert by_sid["OwnAgentState"]["Condition"] == {
        "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [cluster]}}
    assert by_sid["OwnSyncState"]["Condition"] == {
        "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [cluster]}}
    assert by_sid["VerifyOwnIndex"]["Condition"] == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{cluster}#*"]}}
    # copy requests: items "<cluster>#<request_id>" (names.transfer_key)
    assert by_sid["TrackOwnTransfers"]["Condition"] == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{cluster}#*"]}}
    # audit objects: only under its own cluster's audit prefix, so no principal writes
    # another cluster's audit records
    assert _actions(by_sid["ShipAuditLog"]) == ["s3:PutObject"]
    assert json.dumps(by_sid["ShipAuditLog"]["Resource"]).endswith(
        f'"/{lake_layout.audit_cluster_prefix(cluster)}*"]]}}')


def _identity(s: Synthesized, ref: object, concern: str) -> tuple[str, str]:
    """(concern, logical id) of the IAM identity a Users/Roles entry of a policy in stack
    `concern` names, following a cross-stack import to the resource the exporting stack
    refers to."""
    if isinstance(ref, dict) and "Fn::ImportValue" in ref:
        for exporter, template in s.templates.items():
            for output in template.get("Outputs", {}).values():
                if output.get("Export", {}).get("Name") == ref["Fn::ImportValue"]:
                    return exporter, output["Value"]["Ref"]
        raise AssertionError(f"no export {ref}")
    assert isinstance(ref, dict) and set(ref) == {"Ref"}, ref
    return concern, ref["Ref"]


def _policies_attached(s: Synthesized, identity: tuple[str, str]) -> set[tuple[str, str]]:
    """Every policy of any stack that the user or role `identity` holds."""
    held = set()
    for concern, template in s.templates.items():
        for logical_id, resource in template["Resources"].items():
            props = resource["Properties"]
            if resource["Type"] in ("AWS::IAM::User", "AWS::IAM::Role"):
                if (concern, logical_id) == identity:
                    held |= {(concern, arn["Ref"]) for arn in props.get("ManagedPolicyArns", [])}
                    assert "Policies" not in props
            elif resource["Type"] in ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy"):
                attached = props.get("Users", []) + props.get("Roles", [])
                if identity in (_identity(s, ref, concern) for ref in attached):
                    held.add((concern, logical_id))
    return held


def _alert_policy(s: Synthesized, cluster: str) -> tuple[str, dict]:
    (found,) = [(k, r["Properties"]) for k, r in
                s.resources("Monitoring", "AWS::IAM::ManagedPolicy").items()
                if r["Properties"]["ManagedPolicyName"]
                == f"hdfs-events-{s.env}-onprem-{cluster}-alerts"]
    return found


def test_user_and_roles_anywhere_role_hold_only_the_principal_and_alert_policies(
        deployed_env: Synthesized) -> None:
    cluster = deployed_env.env  # cdk.json's clusters: dev -> dev, prod -> prod
    (policy_id,) = _principal_policies(deployed_env)
    alert_policy_id, _ = _alert_policy(deployed_env, cluster)
    (user_id,) = deployed_env.resources("Ingest", "AWS::IAM::User")
    roles = [k for k, r in deployed_env.resources("Ingest", "AWS::IAM::Role").items()
             if "rolesanywhere" in json.dumps(r["Properties"]["AssumeRolePolicyDocument"])]
    assert len(roles) == 1
    for identity in (user_id, roles[0]):
        assert _policies_attached(deployed_env, ("Ingest", identity)) == {
            ("Ingest", policy_id), ("Monitoring", alert_policy_id)}, identity


def test_agent_may_publish_to_the_alert_topic_and_use_only_its_key_through_sns(
        deployed_env: Synthesized, local: Synthesized) -> None:
    for s, cluster in ((deployed_env, deployed_env.env), (local, "demo")):
        (topic_id, topic), = s.resources("Monitoring", "AWS::SNS::Topic").items()
        key_arn = topic["Properties"]["KmsMasterKeyId"]
        assert set(s.resources("Monitoring", "AWS::KMS::Key")) == {key_arn["Fn::GetAtt"][0]}
        _, policy = _alert_policy(s, cluster)
        document = policy["PolicyDocument"]
        by_sid = {st["Sid"]: st for st in document["Statement"]}
        assert set(by_sid) == {"PublishAlerts", "EncryptAlerts"}
        assert all(st["Effect"] == "Allow" for st in by_sid.values())
        publish = by_sid["PublishAlerts"]
        assert _actions(publish) == ["sns:Publish"]
        assert _resources(publish) == [{"Ref": topic_id}]
        assert "Condition" not in publish
        encrypt = by_sid["EncryptAlerts"]
        # Exactly what SNS asks KMS for on a publish; no GenerateDataKey* wildcard.
        assert sorted(_actions(encrypt)) == ["kms:Decrypt", "kms:GenerateDataKey"]
        assert _resources(encrypt) == [key_arn]
        conditions = encrypt["Condition"]["StringEquals"]
        assert conditions["kms:EncryptionContext:aws:sns:topicArn"] == {"Ref": topic_id}
        assert conditions["kms:ViaService"] == {"Fn::Join": ["", [
            "sns.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]}
        assert '"*"' not in json.dumps(document) and ":*" not in json.dumps(document)


def test_each_clusters_alert_policy_goes_to_that_clusters_user_and_role(
        deployed_env: Synthesized, local: Synthesized) -> None:
    for s, cluster, has_role in ((deployed_env, deployed_env.env, True),
                                 (local, "demo", False)):
        _, policy = _alert_policy(s, cluster)
        (user_ref,) = policy["Users"]
        concern, user_id = _identity(s, user_ref, "Monitoring")
        user = s.templates[concern]["Resources"][user_id]
        assert (concern, user["Type"]) == ("Ingest", "AWS::IAM::User")
        assert user["Properties"]["UserName"] == f"hdfs-events-{s.env}-agent-{cluster}"
        if not has_role:  # local: no Roles Anywhere (moto does not model it)
            assert "Roles" not in policy
            continue
        (role_ref,) = policy["Roles"]
        concern, role_id = _identity(s, role_ref, "Monitoring")
        role = s.templates[concern]["Resources"][role_id]
        assert role["Properties"]["RoleName"] == f"hdfs-events-{s.env}-agent-{cluster}"
        assert "rolesanywhere" in json.dumps(role["Properties"]["AssumeRolePolicyDocument"])


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
    (deny,) = [s for p in deployed_env.resources("Ingest", "AWS::SQS::QueuePolicy").values()
               for s in p["Properties"]["PolicyDocument"]["Statement"]
               if s["Effect"] == "Deny" and s["Action"] == "sqs:SendMessage"
               and "EventsQueue" in json.dumps(s["Resource"])]
    assert deny["Principal"] == {"AWS": "*"}
    assert "EventsQueue" in json.dumps(deny["Resource"])
    # No extra_senders in dev and prod: the principal's ARN is the only way past.
    assert set(deny["Condition"]) == {"ArnNotEquals"}
    allowed = deny["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]
    rendered = json.dumps(allowed)
    # The agent's user and Roles Anywhere role; not the consumer (its requests have a queue of
    # their own).
    assert len(allowed) == 2
    assert "User" in rendered and "Role" in rendered and "ConsumerRole" not in rendered


def test_event_queue_deny_spares_extra_senders_by_unique_id(local: Synthesized) -> None:
    # cdk.json local: extra_senders = ["demo=AIDAIT2UOQQY3AUEKVGXU"]. Unique ids are no ARNs:
    # the Deny also needs the caller's aws:userid outside them (the id itself for a user,
    # "<id>:<session>" for a role session) to apply. Enforced: tests/integration/iam.
    (deny,) = [s for p in local.resources("Ingest", "AWS::SQS::QueuePolicy").values()
               for s in p["Properties"]["PolicyDocument"]["Statement"]
               if s.get("Sid") == "OnlyAgentsSendEvents"]
    assert deny["Condition"]["StringNotLike"] == {
        "aws:userid": ["AIDAIT2UOQQY3AUEKVGXU", "AIDAIT2UOQQY3AUEKVGXU:*"]}
    (user,) = deny["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]
    assert "OnPremdemoUser" in json.dumps(user)


def _rendered(value: object) -> str:
    """A resource ARN with its pseudo parameters and references as `${Name}`."""
    if isinstance(value, dict) and "Fn::Join" in value:
        return "".join(_rendered(p) for p in value["Fn::Join"][1])
    if isinstance(value, dict) and len(value) == 1:
        return "${" + json.dumps(next(iter(value.values()))) + "}"
    assert isinstance(value, str), value
    return value


def test_sync_writes_only_under_its_destination_prefix_in_the_customers_bucket(
        local: Synthesized, dev: Synthesized) -> None:
    # cdk.json local: sync_destinations = ["demo=s3://hdfs-events-local-replica/mirror/"]
    bucket = 'arn:${"AWS::Partition"}:s3:::hdfs-events-local-replica'
    touching = {s["Sid"]: s for s in _statements(local)
                if any("local-replica" in _rendered(r) for r in _resources(s))}
    assert set(touching) == {"ReplicateObjects0", "ListReplica0", "ListReplicaUploads0"}
    objects, listing, uploads = (touching[sid] for sid in (
        "ReplicateObjects0", "ListReplica0", "ListReplicaUploads0"))
    assert sorted(_actions(objects)) == ["s3:AbortMultipartUpload", "s3:DeleteObject",
                                         "s3:GetObject", "s3:PutObject"]
    assert [_rendered(r) for r in _resources(objects)] == [f"{bucket}/mirror/*"]
    assert "Condition" not in objects
    assert _actions(listing) == ["s3:ListBucket"]
    assert [_rendered(r) for r in _resources(listing)] == [bucket]
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["mirror/", "mirror/*"]}}
    # `sync run` aborts what a killed run left open; IAM has no s3:prefix key for this one.
    assert _actions(uploads) == ["s3:ListBucketMultipartUploads"]
    assert [_rendered(r) for r in _resources(uploads)] == [bucket]
    # A cluster with no destination in cdk.json gets none of it.
    assert not [s for s in _statements(dev) if s["Sid"].startswith(("Replicate", "ListReplica"))]
