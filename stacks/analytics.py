"""Analytics: the Glue database and tables, the compaction and rollup jobs on a schedule, and the
Athena workgroup with its named queries."""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_logs as logs
from constructs import Construct

from stacks.glue_job_encryption import GlueJobEncryption
from stacks.glue_job_role import GlueJobRole
from stacks.lake_jobs import LakeJobs
from stacks.lake_tables import LakeTables
from stacks.lake_workflow import LakeWorkflow
from stacks.lake_workgroup import LakeWorkGroup
from stacks.settings import DeploySettings
from stacks.storage import StorageStack, removal_policy


def inventory_job_name(settings: DeploySettings) -> str:
    """A plain name: the on-prem principals (Ingest stack) may start its runs."""
    return f"{settings.prefix}-namespace-inventory"


class AnalyticsStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings,
                 storage: StorageStack, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)
        removal = removal_policy(settings)
        lake = storage.lake_in(self)
        lake_uri = f"s3://{lake.bucket_name}"

        tables = LakeTables(self, database_name=settings.glue_database, lake=lake,
                            removal=removal)
        self.database = tables.database

        # One JSON line per changed attribution (glue_jobs/attribution_log.py), for the saved
        # Logs Insights queries with the user (stacks/monitoring.py): Logs Insights cannot join
        # the consumer's event lines to the lake. The consumer's retention; a plain name so the
        # monitoring stack's queries name it without an export.
        self.attribution_log_group_name = f"/{settings.prefix}/attribution"
        attribution_logs = logs.LogGroup(
            self, "AttributionLogs", log_group_name=self.attribution_log_group_name,
            removal_policy=removal)
        cfn_logs: logs.CfnLogGroup = attribution_logs.node.default_child  # type: ignore[assignment]
        cfn_logs.retention_in_days = settings.log_retention_days

        encryption = GlueJobEncryption(self, prefix=settings.prefix, lake_key=storage.lake_key,
                                       removal=removal)
        role = GlueJobRole(self, settings=settings, lake=lake, lake_key=storage.lake_key,
                           index_table=storage.index_table, job_key=encryption.key,
                           tables=tables, attribution_logs=attribution_logs)

        # Plain names (not Ref tokens) so the monitoring stack reads them without an export.
        self.job_names = {"CompactEvents": f"{settings.prefix}-compact-events",
                          "ActivityRollups": f"{settings.prefix}-activity-rollups",
                          "CompactAudit": f"{settings.prefix}-compact-audit",
                          "AttributeEvents": f"{settings.prefix}-attribute-events",
                          "NamespaceInventory": inventory_job_name(settings)}
        jobs = LakeJobs(self, settings=settings, job_names=self.job_names, role=role.role,
                        security=encryption.security, lake_uri=lake_uri,
                        database_name=self.database.database_name,
                        index_table=storage.index_table,
                        attribution_log_group_name=self.attribution_log_group_name)
        # Every job, for the failure alarms and the dashboard's job rows.
        self.jobs = jobs.all

        self.workflow = LakeWorkflow(self, prefix=settings.prefix,
                                     schedule=settings.glue_schedule, jobs=jobs).workflow
        self.workgroup = LakeWorkGroup(self, prefix=settings.prefix,
                                       retain_data=settings.retain_data, lake_uri=lake_uri,
                                       lake_key=storage.lake_key,
                                       database_name=self.database.database_name).workgroup

        CfnOutput(self, "GlueDatabaseName", value=self.database.database_name,
                  description="Glue Data Catalog database of the lake")
        CfnOutput(self, "CompactJobName", value=jobs.compact_job.job_name,
                  description="Glue job: raw/ -> curated/events")
        CfnOutput(self, "CompactAuditJobName", value=jobs.compact_audit_job.job_name,
                  description="Glue job: raw-audit/ -> curated/audit")
        CfnOutput(self, "RollupsJobName", value=jobs.rollups_job.job_name,
                  description="Glue job: curated/events -> rollups")
        CfnOutput(self, "AttributeJobName", value=jobs.attribute_job.job_name,
                  description="Glue job: curated/events x curated/audit -> curated/attribution")
        CfnOutput(self, "InventoryJobName", value=jobs.inventory_job.job_name,
                  description="Glue job: fsimage/ -> curated/namespace_inventory")
        CfnOutput(self, "AttributionLogGroupName", value=self.attribution_log_group_name,
                  description="One JSON line per changed attribution (who made each event), "
                  "for the saved Logs Insights queries under attribution/")
        CfnOutput(self, "GlueWorkflowName", value=self.workflow.workflow_name,
                  description="Scheduled compactions, attribution, then rollups")
        CfnOutput(self, "AthenaWorkGroupName", value=self.workgroup.name,
                  description="Athena workgroup with the named queries")
