"""cdk-nag (AwsSolutions) acknowledgements: one finding per call, each with its reason.

An acknowledgement names the exact finding (rule and, for IAM5, the exact wildcard) and is made
by the construct that causes it (stacks/ingest_function.py, onprem_principal.py, glue_job_role.py), so any
new wildcard or new finding anywhere fails the synth. This module holds only the vocabulary;
it imports no stack.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

from stacks.settings import DeploySettings

NAG = "AwsSolutions::AwsSolutions-"
PREFIX_OBJECTS = ("Object keys are generated under this one lake prefix (one per message, "
                  "Spark part file or partition), so the grant is the prefix, nothing wider")
GRANT_ACTIONS = {
    "s3:Abort*": "AbortMultipartUpload/AbortMultipartUploads of the CDK grant: only on the "
                 "objects of the granted prefix",
    "s3:GetObject*": "GetObject and its variants (version, ACL, tagging) on the granted prefix",
    "s3:GetBucket*": "Bucket metadata reads (location, versioning) Spark's S3 client needs",
    "s3:List*": "ListBucket/ListBucketVersions: Spark lists the partitions it reads",
    "s3:DeleteObject*": "Compaction replaces its own output and rollups rewrite a day",
    "kms:GenerateDataKey*": "Writes to the KMS-encrypted lake and encrypted job logs need data "
                            "keys of these keys only",
    "kms:ReEncrypt*": "Part of the CDK encrypt grant, restricted to these keys",
}
# The two actions CDK's encrypt grant adds on the lake's key when it has one (lake_kms).
LAKE_KEY_ACTIONS = ("kms:GenerateDataKey*", "kms:ReEncrypt*")


def ack(scope: IConstruct, finding: str, reason: str) -> None:
    Validations.of(scope).acknowledge(Acknowledgment(id=f"{NAG}{finding}", reason=reason))


def ack_actions(scope: IConstruct, actions: list[str]) -> None:
    """IAM5 findings of CDK grants' wildcard actions, each with its reason above."""
    for action in actions:
        ack(scope, f"IAM5[Action::{action}]", GRANT_ACTIONS[action])


def ack_lake_prefixes(scope: IConstruct, settings: DeploySettings, prefixes: list[str]) -> None:
    """IAM5 findings of grants on lake prefixes ("raw/*"): generated keys, one prefix each."""
    lake = lake_arn_as_nag_prints_it(settings)
    for prefix in prefixes:
        ack(scope, f"IAM5[Resource::{lake}/{prefix}*]", PREFIX_OBJECTS)


def lake_arn_as_nag_prints_it(settings: DeploySettings) -> str:
    """stacks.storage.lake_bucket_name's ARN with pseudo parameters as cdk-nag renders them."""
    return f"arn:<AWS::Partition>:s3:::{settings.prefix}-lake-<AWS::AccountId>-<AWS::Region>"
