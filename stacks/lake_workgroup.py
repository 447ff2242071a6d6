"""The Athena workgroup over the lake and its named queries (stacks/lake_catalog.py)."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_athena as athena
from aws_cdk import aws_kms as kms

from stacks import lake_catalog as catalog
from stacks.storage import ATHENA_RESULTS_PREFIX


class LakeWorkGroup:
    """Not a Construct: the workgroup and queries keep the stack as their scope, so their
    CloudFormation logical IDs stay those already deployed (a new ID would recreate the
    workgroup and lose its query history)."""

    def __init__(self, stack: Stack, *, prefix: str, retain_data: bool, lake_uri: str,
                 lake_key: kms.IKey | None, database_name: str) -> None:
        self.workgroup = athena.CfnWorkGroup(
            stack, "WorkGroup", name=prefix, description="hdfs-events lake queries",
            recursive_delete_option=not retain_data,
            work_group_configuration=athena.CfnWorkGroup.WorkGroupConfigurationProperty(
                enforce_work_group_configuration=True,
                publish_cloud_watch_metrics_enabled=True,
                result_configuration=athena.CfnWorkGroup.ResultConfigurationProperty(
                    output_location=f"{lake_uri}/{ATHENA_RESULTS_PREFIX}",
                    encryption_configuration=athena.CfnWorkGroup.EncryptionConfigurationProperty(
                        encryption_option="SSE_KMS" if lake_key else "SSE_S3",
                        kms_key=lake_key.key_arn if lake_key else None))))
        for query_id, (description, sql) in catalog.NAMED_QUERIES.items():
            query = athena.CfnNamedQuery(
                stack, f"Query-{query_id}", name=query_id, description=description,
                database=database_name, query_string=sql, work_group=self.workgroup.name)
            query.add_dependency(self.workgroup)
