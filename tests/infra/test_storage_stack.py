"""The lake bucket and the DynamoDB tables, as synthesized for dev and prod."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match

from hdfs_events import lake_layout, names
from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.slow


def _lake(s: Synthesized) -> dict:
    (lake,) = [r for r in s.resources("Storage", "AWS::S3::Bucket").values()
               if "LifecycleConfiguration" in r["Properties"]
               and any(rule.get("Prefix") == lake_layout.RAW_PREFIX
                       for rule in r["Properties"]["LifecycleConfiguration"]["Rules"])]
    return lake


def test_lake_is_kms_encrypted_in_prod_and_sse_s3_in_dev(dev: Synthesized,
                                                         prod: Synthesized) -> None:
    prod_sse = _lake(prod)["Properties"]["BucketEncryption"][
        "ServerSideEncryptionConfiguration"][0]
    assert prod_sse["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    assert "KMSMasterKeyID" in prod_sse["ServerSideEncryptionByDefault"]
    assert prod_sse["BucketKeyEnabled"] is True
    dev_sse = _lake(dev)["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert dev_sse[0]["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"


def test_every_bucket_blocks_public_access_and_is_encrypted(deployed_env: Synthesized) -> None:
    buckets = deployed_env.resources("Storage", "AWS::S3::Bucket")
    assert len(buckets) == 2  # the lake and its access-log bucket
    for bucket in buckets.values():
        assert bucket["Properties"]["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True, "BlockPublicPolicy": True,
            "IgnorePublicAcls": True, "RestrictPublicBuckets": True}
        assert bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]


def test_every_bucket_policy_denies_requests_without_tls(deployed_env: Synthesized) -> None:
    policies = deployed_env.resources("Storage", "AWS::S3::BucketPolicy")
    buckets = deployed_env.resources("Storage", "AWS::S3::Bucket")
    covered = set()
    for policy in policies.values():
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        tls = [s for s in statements if s["Effect"] == "Deny"
               and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}]
        assert tls, policy
        assert tls[0]["Action"] == "s3:*" and tls[0]["Principal"] == {"AWS": "*"}
        # Both the bucket and its objects.
        assert len(tls[0]["Resource"]) == 2
        covered.add(policy["Properties"]["Bucket"]["Ref"])
    assert covered == set(buckets)


def test_lake_logs_access_and_expires_raw_before_quarantine(deployed_env: Synthesized) -> None:
    lake = _lake(deployed_env)["Properties"]
    assert lake["LoggingConfiguration"]["DestinationBucketName"]["Ref"] in \
        deployed_env.resources("Storage", "AWS::S3::Bucket")
    rules = {r.get("Prefix"): r for r in lake["LifecycleConfiguration"]["Rules"]}
    raw_days = rules[lake_layout.RAW_PREFIX]["ExpirationInDays"]
    assert raw_days >= 2
    assert rules[lake_layout.QUARANTINE_PREFIX]["ExpirationInDays"] > raw_days
    # raw-audit/ is no prefix of raw/'s: its own rule, as long as raw/'s.
    assert rules[lake_layout.AUDIT_RAW_PREFIX]["ExpirationInDays"] == raw_days


def test_lake_is_versioned_in_prod_only(dev: Synthesized, prod: Synthesized) -> None:
    assert _lake(prod)["Properties"]["VersioningConfiguration"] == {"Status": "Enabled"}
    assert "VersioningConfiguration" not in _lake(dev)["Properties"]


@pytest.mark.parametrize(("pk", "sk"), [(names.STATE_PK, names.STATE_SK),
                                        (names.INDEX_PK, names.INDEX_SK),
                                        (names.TRANSFERS_PK, None)])
def test_tables_are_on_demand_encrypted_recoverable_with_ttl(deployed_env: Synthesized, pk: str,
                                                            sk: str | None) -> None:
    keys = [{"AttributeName": pk, "KeyType": "HASH"}]
    if sk:
        keys.append({"AttributeName": sk, "KeyType": "RANGE"})
    deployed_env.template("Storage").has_resource_properties("AWS::DynamoDB::Table", {
        "KeySchema": keys,
        "BillingMode": "PAY_PER_REQUEST",
        "SSESpecification": {"SSEEnabled": True},
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "TimeToLiveSpecification": {"AttributeName": names.TTL_ATTRIBUTE, "Enabled": True},
    })


def test_the_sync_has_its_own_state_table_keyed_by_cluster(deployed_env: Synthesized) -> None:
    tables = deployed_env.resources("Storage", "AWS::DynamoDB::Table")
    (sync,) = [t for k, t in tables.items() if k.startswith("SyncTable")]
    assert sync["Properties"]["KeySchema"] == [
        {"AttributeName": names.SYNC_PK, "KeyType": "HASH"},
        {"AttributeName": names.SYNC_SK, "KeyType": "RANGE"}]
    assert "SyncTableName" in deployed_env.templates["Storage"]["Outputs"]


STATEFUL = ("AWS::S3::Bucket", "AWS::DynamoDB::Table", "AWS::KMS::Key")


def test_stateful_resources_are_retained_in_prod(prod: Synthesized) -> None:
    for type_ in STATEFUL:
        resources = prod.resources("Storage", type_)
        assert resources, type_
        for resource in resources.values():
            assert resource["DeletionPolicy"] == "Retain", type_
            assert resource["UpdateReplacePolicy"] == "Retain", type_
    for table in prod.resources("Storage", "AWS::DynamoDB::Table").values():
        assert table["Properties"]["DeletionProtectionEnabled"] is True
    prod.template("Ingest").all_resources("AWS::SQS::Queue", {"DeletionPolicy": "Retain"})
    prod.template("Ingest").all_resources("AWS::Logs::LogGroup", {"DeletionPolicy": "Retain"})


def test_stateful_resources_are_destroyed_in_dev(dev: Synthesized) -> None:
    for type_ in ("AWS::S3::Bucket", "AWS::DynamoDB::Table"):
        for resource in dev.resources("Storage", type_).values():
            assert resource["DeletionPolicy"] == "Delete", type_
    # Dev buckets empty themselves so a stack delete does not fail on a non-empty bucket.
    dev.template("Storage").resource_count_is("Custom::S3AutoDeleteObjects", 2)
    dev.template("Ingest").all_resources("AWS::SQS::Queue", {"DeletionPolicy": "Delete"})
    dev.template("Analytics").has_resource("AWS::Glue::Database", {"DeletionPolicy": "Delete"})


def test_lake_bucket_name_is_derived_from_env_account_and_region(prod: Synthesized) -> None:
    prod.template("Storage").has_resource_properties("AWS::S3::Bucket", {
        "BucketName": {"Fn::Join": ["", ["hdfs-events-prod-lake-", {"Ref": "AWS::AccountId"},
                                         "-", {"Ref": "AWS::Region"}]]},
        "LifecycleConfiguration": Match.any_value(),
    })
