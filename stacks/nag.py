"""cdk-nag (AwsSolutions) acknowledgements: one finding per call, each with its reason.

An acknowledgement names the exact finding (rule and, for IAM5, the exact wildcard) on the
construct that causes it, so any new wildcard or new finding anywhere fails the synth.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

from hdfs_events import names
from stacks import lake_catalog as catalog
from stacks.analytics import GLUE_QUARANTINE

if TYPE_CHECKING:
    from stacks.product import Product
    from stacks.settings import Settings

NAG = "AwsSolutions::AwsSolutions-"
_PREFIX_OBJECTS = ("Object keys are generated under this one lake prefix (one per message, "
                   "Spark part file or partition), so the grant is the prefix, nothing wider")
_GRANT_ACTIONS = {
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


def ack(scope: IConstruct, finding: str, reason: str) -> None:
    Validations.of(scope).acknowledge(Acknowledgment(id=f"{NAG}{finding}", reason=reason))


def lake_arn_as_nag_prints_it(settings: Settings) -> str:
    """stacks.storage.lake_bucket_name's ARN with pseudo parameters as cdk-nag renders them."""
    return f"arn:<AWS::Partition>:s3:::{settings.prefix}-lake-<AWS::AccountId>-<AWS::Region>"


def _ack_prefixes(role: IConstruct, lake: str, prefixes: list[str]) -> None:
    for prefix in prefixes:
        ack(role, f"IAM5[Resource::{lake}/{prefix}*]", _PREFIX_OBJECTS)


def _ack_actions(scope: IConstruct, actions: list[str]) -> None:
    for action in actions:
        ack(scope, f"IAM5[Action::{action}]", _GRANT_ACTIONS[action])


def acknowledge_findings(product: Product, settings: Settings) -> None:
    lake = lake_arn_as_nag_prints_it(settings)
    kms_actions = ["kms:GenerateDataKey*", "kms:ReEncrypt*"] if product.storage.lake_key else []

    consumer = product.ingest.consumer
    ack(consumer.function, "L1", "Python 3.11 is the runtime the consumer's code and tests run "
        "on (pyproject pins 3.11, as Glue 5.1 does); upgrade both together")
    ack(consumer.role, "IAM5[Resource::*]", "X-Ray PutTraceSegments/PutTelemetryRecords (active "
        "tracing) support no resource-level permissions")
    _ack_actions(consumer.role, ["s3:Abort*", *kms_actions])
    _ack_prefixes(consumer.role, lake, [names.RAW_PREFIX, names.QUARANTINE_PREFIX])

    for principal in product.ingest.principals:
        ack(principal.policy, "IAM5[Resource::*]", "cloudwatch:PutMetricData supports no "
            "resource-level permissions; the cloudwatch:namespace condition limits it to the "
            f"{names.METRICS_NAMESPACE} namespace")
        _ack_prefixes(principal.policy, lake, list(settings.export_prefixes))
        for bucket, prefix in settings.sync_destinations_of(principal.cluster):
            ack(principal.policy, f"IAM5[Resource::arn:<AWS::Partition>:s3:::{bucket}/{prefix}*]",
                "`sync` writes one object per replicated HDFS file under this destination "
                "prefix (cdk.json sync_destinations), keyed by its HDFS path: the prefix is "
                "the narrowest grant")
        ack(principal.access_key_secret, "SMG4", "An IAM user's access key cannot be rotated "
            "without redeploying it to the edge node; the rotation procedure is in "
            "docs/deploy.md, and IAM Roles Anywhere (no long-lived key) is the recommended "
            "alternative deployed beside it")

    analytics = product.analytics
    ack(analytics.role, "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AWSGlueServiceRole]", "The AWS-maintained Glue service role policy (Glue's own "
        "CloudWatch, EC2 network interface and catalog calls); lake access is granted "
        "separately by prefix")
    _ack_actions(analytics.role, ["s3:Abort*", "s3:DeleteObject*", "s3:GetBucket*",
                                  "s3:GetObject*", "s3:List*", "kms:GenerateDataKey*",
                                  "kms:ReEncrypt*"])
    _ack_prefixes(analytics.role, lake, [
        names.RAW_PREFIX, names.CURATED_PREFIX, catalog.CURATED_EVENTS,
        catalog.CURATED_ACTIVITY, catalog.CURATED_MASS_DELETES, catalog.CURATED_GAPS,
        GLUE_QUARANTINE])
    ack(analytics.role, "IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:"
        "<AWS::AccountId>:log-group:/aws-glue/*]", "Glue names its job log groups under "
        "/aws-glue/ at run time; AssociateKmsKey encrypts them with the job key")
    ack(analytics.role, "IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-"
        "<AWS::AccountId>-<AWS::Region>/*]", "Read access to the job scripts and library zip "
        "that CDK uploads as assets (content-hashed keys)")
