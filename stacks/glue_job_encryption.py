"""What the Glue jobs encrypt with: their own key for logs and bookmarks, and the security
configuration every job runs under (the lake's own encryption for what they write to S3)."""

from __future__ import annotations

from aws_cdk import Aws, RemovalPolicy, Stack
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms


class GlueJobEncryption:
    """Not a Construct: the key and the security configuration keep the stack as their scope,
    so their CloudFormation logical IDs stay those already deployed (a replaced key would leave
    the bookmarks and logs encrypted under the old one unreadable to the jobs)."""

    def __init__(self, stack: Stack, *, prefix: str, lake_key: kms.IKey | None,
                 removal: RemovalPolicy) -> None:
        self.key = kms.Key(stack, "GlueKey", enable_key_rotation=True,
                           description="hdfs-events Glue job logs and bookmarks",
                           removal_policy=removal)
        # CloudWatch Logs encrypts the jobs' log groups with this key.
        self.key.add_to_resource_policy(iam.PolicyStatement(
            actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*",
                     "kms:Describe*"],
            principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.amazonaws.com")],
            resources=["*"],
            conditions={"ArnLike": {"kms:EncryptionContext:aws:logs:arn":
                                    f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}"
                                    ":log-group:/aws-glue/*"}}))
        s3_encryption = (glue.S3Encryption.kms(lake_key) if lake_key
                         else glue.S3Encryption.s3_managed())
        self.security = glue.SecurityConfiguration(
            stack, "Security", security_configuration_name=f"{prefix}-jobs",
            s3_encryption=s3_encryption,
            cloud_watch_encryption=glue.CloudWatchEncryption.kms(self.key),
            job_bookmarks_encryption=glue.JobBookmarksEncryption.client_side_kms(self.key))
