"""Analytics: the Glue database and tables, the compaction and rollup jobs on a schedule, and the
Athena workgroup with its named queries."""

from __future__ import annotations

from aws_cdk import Aws, CfnOutput, Duration, Stack
from aws_cdk import aws_athena as athena
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from glue_jobs.jvm_settings import glue_conf_argument
from hdfs_events import names
from stacks import lake_catalog as catalog
from stacks import nag
from stacks.assets import glue_job_jar, glue_library_zip, glue_script
from stacks.settings import DeploySettings
from stacks.storage import ATHENA_RESULTS_PREFIX, StorageStack, removal_policy

GLUE_QUARANTINE = f"{names.QUARANTINE_PREFIX}glue/"
# The job states a conditional trigger can watch besides SUCCEEDED (AWS::Glue::Trigger
# Condition: "Currently, the values supported are SUCCEEDED, STOPPED, TIMEOUT, and FAILED").
FAILED_STATES = (glue.JobState.FAILED, glue.JobState.TIMEOUT, glue.JobState.STOPPED)
# names.fsimage_indexed_key of any cluster and txid.
IMAGE_INDEXED = f"{names.FSIMAGE_PREFIX}cluster=*/txid=*/_indexed.json"


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

        self.database = glue.Database(self, "Database", database_name=settings.glue_database,
                                      description="hdfs-events lake", removal_policy=removal)
        # The tables live in the lake bucket and take its encryption.
        in_lake = glue.S3TableStorage.from_bucket(lake)
        # events: partitions registered by the compaction job, not projected. It writes each
        # partition to a fresh run=<id>/ folder and then switches the partition's catalog
        # location (glue_jobs/catalog.py); projection would make Athena ignore those locations
        # and read every run's files under dt=<d>/, superseded ones included.
        self.events_table = glue.S3Table(
            self, "EventsTable", table_name=catalog.EVENTS_TABLE, database=self.database,
            description="Compacted HDFS events, one row per (cluster, txid, index)",
            storage=in_lake, s3_prefix=catalog.CURATED_EVENTS, data_format=glue.DataFormat.PARQUET,
            columns=catalog.event_columns(), partition_keys=catalog.event_partition_keys())
        self.activity_table = glue.S3Table(
            self, "ActivityTable", table_name=catalog.ACTIVITY_TABLE, database=self.database,
            description="Daily activity per directory prefix and owner",
            storage=in_lake, s3_prefix=catalog.CURATED_ACTIVITY,
            data_format=glue.DataFormat.PARQUET, columns=catalog.activity_columns(),
            partition_keys=catalog.dt_partition(), partition_projection=catalog.dt_projection(),
            parameters=catalog.dt_location_template(f"{lake_uri}/{catalog.CURATED_ACTIVITY}"))
        self.mass_deletes_table = glue.S3Table(
            self, "MassDeletesTable", table_name=catalog.MASS_DELETES_TABLE,
            database=self.database, description="UNLINK bursts over the threshold",
            storage=in_lake, s3_prefix=catalog.CURATED_MASS_DELETES,
            data_format=glue.DataFormat.PARQUET, columns=catalog.mass_delete_columns(),
            partition_keys=catalog.dt_partition(), partition_projection=catalog.dt_projection(),
            parameters=catalog.dt_location_template(
                f"{lake_uri}/{catalog.CURATED_MASS_DELETES}"))
        self.gaps_table = glue.S3Table(
            self, "GapsTable", table_name=catalog.GAPS_TABLE, database=self.database,
            description="Edits purged before the agent read them, per cluster and day",
            storage=in_lake, s3_prefix=catalog.CURATED_GAPS,
            data_format=glue.DataFormat.PARQUET, columns=catalog.gap_columns(),
            partition_keys=catalog.dt_partition(), partition_projection=catalog.dt_projection(),
            parameters=catalog.dt_location_template(f"{lake_uri}/{catalog.CURATED_GAPS}"))
        # audit: registered partitions at run=<id>/ folders, as events (glue_jobs/compact_audit.py).
        self.audit_table = glue.S3Table(
            self, "AuditTable", table_name=catalog.AUDIT_TABLE, database=self.database,
            description="NameNode audit records, one row per (cluster, host, file_id, offset)",
            storage=in_lake, s3_prefix=catalog.CURATED_AUDIT, data_format=glue.DataFormat.PARQUET,
            columns=catalog.audit_columns(), partition_keys=catalog.event_partition_keys())
        # attribution: who made each event; registered partitions at run=<id>/ folders, as
        # events (glue_jobs/attribute_events.py).
        self.attribution_table = glue.S3Table(
            self, "AttributionTable", table_name=catalog.ATTRIBUTION_TABLE,
            database=self.database,
            description="Who made each event, from the NameNode audit log: one row per "
            "attributed (cluster, txid, index)",
            storage=in_lake, s3_prefix=catalog.CURATED_ATTRIBUTION,
            data_format=glue.DataFormat.PARQUET, columns=catalog.attribution_columns(),
            partition_keys=catalog.event_partition_keys())
        # The namespace at an fsimage's txid: registered partitions at run=<id>/ folders, as
        # events (glue_jobs/inventory_run.py).
        self.inventory_table = glue.S3Table(
            self, "InventoryTable", table_name=catalog.INVENTORY_TABLE, database=self.database,
            description="The namespace at a checkpoint (fsimage): one row per path",
            storage=in_lake, s3_prefix=catalog.CURATED_INVENTORY,
            data_format=glue.DataFormat.PARQUET, columns=catalog.inventory_columns(),
            partition_keys=catalog.inventory_partition_keys())

        # One JSON line per changed attribution (glue_jobs/attribution_log.py), for the saved
        # Logs Insights queries with the user (stacks/monitoring.py): Logs Insights cannot join
        # the consumer's event lines to the lake. The consumer's retention; a plain name so the
        # monitoring stack's queries name it without an export.
        self.attribution_log_group_name = f"/{settings.prefix}/attribution"
        self.attribution_logs = logs.LogGroup(
            self, "AttributionLogs", log_group_name=self.attribution_log_group_name,
            removal_policy=removal)
        cfn_logs: logs.CfnLogGroup = self.attribution_logs.node.default_child  # type: ignore[assignment]
        cfn_logs.retention_in_days = settings.log_retention_days

        self.glue_key = kms.Key(self, "GlueKey", enable_key_rotation=True,
                                description="hdfs-events Glue job logs and bookmarks",
                                removal_policy=removal)
        # CloudWatch Logs encrypts the jobs' log groups with this key.
        self.glue_key.add_to_resource_policy(iam.PolicyStatement(
            actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*",
                     "kms:Describe*"],
            principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.amazonaws.com")],
            resources=["*"],
            conditions={"ArnLike": {"kms:EncryptionContext:aws:logs:arn":
                                    f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}"
                                    ":log-group:/aws-glue/*"}}))
        s3_encryption = (glue.S3Encryption.kms(storage.lake_key) if storage.lake_key
                         else glue.S3Encryption.s3_managed())
        self.security = glue.SecurityConfiguration(
            self, "Security", security_configuration_name=f"{settings.prefix}-jobs",
            s3_encryption=s3_encryption,
            cloud_watch_encryption=glue.CloudWatchEncryption.kms(self.glue_key),
            job_bookmarks_encryption=glue.JobBookmarksEncryption.client_side_kms(self.glue_key))

        self.role = iam.Role(
            self, "JobRole", assumed_by=iam.ServicePrincipal("glue.amazonaws.com"),
            description="hdfs-events Glue jobs",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(
                "service-role/AWSGlueServiceRole")])
        self._grant_job_calls(lake, storage.lake_key, storage.index_table)
        self._acknowledge_role_findings(settings)

        library = glue.Code.from_asset(str(glue_library_zip()))
        workers = glue.WorkerConfiguration(
            worker_type=glue.WorkerType(settings.glue_worker_type.replace(".", "_")),
            number_of_workers=settings.glue_workers)
        common = {
            "role": self.role, "glue_version": glue.GlueVersion.V5_1,
            "worker_configuration": workers, "extra_python_files": [library],
            "security_configuration": self.security,
            "timeout": Duration.minutes(settings.glue_timeout_minutes),
            # One run at a time: the watermark and partition switches assume it.
            "max_concurrent_runs": 1, "max_retries": 1,
            "enable_metrics": True, "enable_observability_metrics": True,
            "continuous_logging": glue.ContinuousLoggingProps(enabled=True),
        }
        # Every job's JVMs start with the settings of a local job session (glue_jobs/
        # jvm_settings.py: the Parallel collector, and why); Glue hands --conf to spark-submit.
        jvm = {"--conf": glue_conf_argument()}
        # Plain names (not Ref tokens) so the monitoring stack reads them without an export.
        self.job_names = {"CompactEvents": f"{settings.prefix}-compact-events",
                          "ActivityRollups": f"{settings.prefix}-activity-rollups",
                          "CompactAudit": f"{settings.prefix}-compact-audit",
                          "AttributeEvents": f"{settings.prefix}-attribute-events",
                          "NamespaceInventory": inventory_job_name(settings)}
        self.compact_job = glue.PySparkEtlJob(
            self, "CompactEvents", job_name=self.job_names["CompactEvents"],
            description="raw/ JSON lines -> curated/events Parquet, deduplicated",
            script=glue.Code.from_asset(str(glue_script("compact"))),
            # Our JVM parser of raw lines (glue_jobs/contract_sql.parse_canonical_line).
            extra_jars=[glue.Code.from_asset(str(glue_job_jar()))],
            default_arguments=jvm | {
                # Lake roots: the job derives raw/, curated/ and quarantine/glue/ from them.
                "--source": lake_uri,
                "--target": lake_uri,
                "--catalog_database": self.database.database_name,
                "--catalog_table": catalog.EVENTS_TABLE,
            }, **common)
        self.rollups_job = glue.PySparkEtlJob(
            self, "ActivityRollups", job_name=self.job_names["ActivityRollups"],
            description="curated/events -> daily activity and mass-delete tables",
            script=glue.Code.from_asset(str(glue_script("rollups"))),
            # No --from_dt/--to_dt: each run rolls up the days the compaction runs marked since
            # the last one (glue_jobs/rollup_days.py), so its cost follows the new data, not the
            # lake's age. A range by hand is a job run's own --from_dt/--to_dt.
            default_arguments=jvm | {
                "--source": lake_uri,
                "--target": lake_uri,
                "--catalog_database": self.database.database_name,
                "--prefix_depth": str(settings.rollup_prefix_depth),
                "--small_file_bytes": str(settings.small_file_bytes),
                "--mass_delete_threshold": str(settings.mass_delete_threshold),
                "--catalog_table": catalog.EVENTS_TABLE,
                # Who made each mass delete (the attribution job's table).
                "--attribution_table": catalog.ATTRIBUTION_TABLE,
            }, **common)

        self.compact_audit_job = glue.PySparkEtlJob(
            self, "CompactAudit", job_name=self.job_names["CompactAudit"],
            description="raw-audit/ JSON lines -> curated/audit Parquet, one row per audit line",
            script=glue.Code.from_asset(str(glue_script("compact_audit"))),
            default_arguments=jvm | {
                "--source": lake_uri,
                "--target": lake_uri,
                "--catalog_database": self.database.database_name,
                "--catalog_table": catalog.AUDIT_TABLE,
            }, **common)

        self.attribute_job = glue.PySparkEtlJob(
            self, "AttributeEvents", job_name=self.job_names["AttributeEvents"],
            description="curated/events x curated/audit -> curated/attribution (who made each "
            "event)",
            script=glue.Code.from_asset(str(glue_script("attribute_events"))),
            default_arguments=jvm | {
                "--source": lake_uri,
                "--target": lake_uri,
                "--catalog_database": self.database.database_name,
                "--events_table": catalog.EVENTS_TABLE,
                "--audit_table": catalog.AUDIT_TABLE,
                "--attribution_table": catalog.ATTRIBUTION_TABLE,
                "--log_group": self.attribution_log_group_name,
            }, **common)

        # Run per image, not on the schedule: after `hdfs-events-agent fetch-image`, with
        # --image and --cluster (docs/fsimage.md). The agent's first start from the image
        # starts it and the run writes the index of the consumer's prefixes too (first start
        # only: refused once the cluster has a sequencer position).
        self.inventory_job = glue.PySparkEtlJob(
            self, "NamespaceInventory", job_name=self.job_names["NamespaceInventory"],
            description="fsimage/ -> curated/namespace_inventory (one row per path)",
            script=glue.Code.from_asset(str(glue_script("namespace_inventory"))),
            # Our JVM decoder of the image's parts (glue_jobs/jvm: FsImageParts).
            extra_jars=[glue.Code.from_asset(str(glue_job_jar()))],
            default_arguments=jvm | {
                "--target": lake_uri,
                "--catalog_database": self.database.database_name,
                "--catalog_table": catalog.INVENTORY_TABLE,
                "--index_table": storage.index_table.table_name,
                "--index_prefixes": ",".join(settings.index_prefixes),
            }, **common)

        # Every job, for the failure alarms and the dashboard's job rows.
        self.jobs = (self.compact_job, self.rollups_job, self.compact_audit_job,
                     self.attribute_job, self.inventory_job)

        self.workflow = glue.Workflow(self, "Workflow", workflow_name=f"{settings.prefix}-lake",
                                      description="Compactions, attribution, then rollups",
                                      max_concurrent_runs=1)
        self.workflow.add_scheduled_trigger(
            "Schedule", schedule=glue.TriggerSchedule.expression(settings.glue_schedule),
            start_on_creation=True,
            actions=[glue.Action.job(self.compact_job), glue.Action.job(self.compact_audit_job)])
        # Both compactions, each on its own days: a run recomputes the days whose events or
        # audit partitions moved since its last one (glue_jobs/attribution_days.py).
        self.workflow.add_conditional_trigger(
            "AfterBothCompactions", start_on_creation=True,
            predicate=glue.Predicate(logical=glue.PredicateLogical.AND, conditions=[
                glue.Condition.job(self.compact_job, glue.JobState.SUCCEEDED),
                glue.Condition.job(self.compact_audit_job, glue.JobState.SUCCEEDED)]),
            actions=[glue.Action.job(self.attribute_job)])
        self._start_rollups_after_attribution()

        self.workgroup = athena.CfnWorkGroup(
            self, "WorkGroup", name=settings.prefix, description="hdfs-events lake queries",
            recursive_delete_option=not settings.retain_data,
            work_group_configuration=athena.CfnWorkGroup.WorkGroupConfigurationProperty(
                enforce_work_group_configuration=True,
                publish_cloud_watch_metrics_enabled=True,
                result_configuration=athena.CfnWorkGroup.ResultConfigurationProperty(
                    output_location=f"{lake_uri}/{ATHENA_RESULTS_PREFIX}",
                    encryption_configuration=athena.CfnWorkGroup.EncryptionConfigurationProperty(
                        encryption_option="SSE_KMS" if storage.lake_key else "SSE_S3",
                        kms_key=storage.lake_key.key_arn if storage.lake_key else None))))
        for query_id, (description, sql) in catalog.NAMED_QUERIES.items():
            query = athena.CfnNamedQuery(
                self, f"Query-{query_id}", name=query_id, description=description,
                database=self.database.database_name, query_string=sql,
                work_group=self.workgroup.name)
            query.add_dependency(self.workgroup)

        CfnOutput(self, "GlueDatabaseName", value=self.database.database_name,
                  description="Glue Data Catalog database of the lake")
        CfnOutput(self, "CompactJobName", value=self.compact_job.job_name,
                  description="Glue job: raw/ -> curated/events")
        CfnOutput(self, "CompactAuditJobName", value=self.compact_audit_job.job_name,
                  description="Glue job: raw-audit/ -> curated/audit")
        CfnOutput(self, "RollupsJobName", value=self.rollups_job.job_name,
                  description="Glue job: curated/events -> rollups")
        CfnOutput(self, "AttributeJobName", value=self.attribute_job.job_name,
                  description="Glue job: curated/events x curated/audit -> curated/attribution")
        CfnOutput(self, "InventoryJobName", value=self.inventory_job.job_name,
                  description="Glue job: fsimage/ -> curated/namespace_inventory")
        CfnOutput(self, "AttributionLogGroupName", value=self.attribution_log_group_name,
                  description="One JSON line per changed attribution (who made each event), "
                  "for the saved Logs Insights queries under attribution/")
        CfnOutput(self, "GlueWorkflowName", value=self.workflow.workflow_name,
                  description="Scheduled compactions, attribution, then rollups")
        CfnOutput(self, "AthenaWorkGroupName", value=self.workgroup.name,
                  description="Athena workgroup with the named queries")

    def _start_rollups_after_attribution(self) -> None:
        """The rollups after the attribution (a mass delete names the users the attribution
        found), whatever its end: a failed attribution or audit compaction must not stop the
        activity numbers, whose marks the events compaction wrote. The attribution runs only
        when both compactions succeeded, so exactly one of these triggers fires in a workflow
        run whose events compaction succeeded: after the attribution's end (ANY of its final
        states), or, when the audit compaction ended otherwise (and the attribution never
        started), after the two compactions' ends (Glue's AND takes one state per condition:
        a trigger per failed state). The days the attribution rewrote are marked for the next
        rollups run (glue_jobs/rollup_days.py), so a rollups run started without it still
        redoes them later."""
        ended = (glue.JobState.SUCCEEDED, *FAILED_STATES)
        self.workflow.add_conditional_trigger(
            "AfterAttribution", start_on_creation=True,
            predicate=glue.Predicate(logical=glue.PredicateLogical.ANY, conditions=[
                glue.Condition.job(self.attribute_job, state) for state in ended]),
            actions=[glue.Action.job(self.rollups_job)])
        for state in FAILED_STATES:
            self.workflow.add_conditional_trigger(
                f"WithoutAudit{state.value.title()}", start_on_creation=True,
                predicate=glue.Predicate(logical=glue.PredicateLogical.AND, conditions=[
                    glue.Condition.job(self.compact_job, glue.JobState.SUCCEEDED),
                    glue.Condition.job(self.compact_audit_job, state)]),
                actions=[glue.Action.job(self.rollups_job)])

    def _grant_job_calls(self, lake: s3.IBucket, lake_key: kms.IKey | None,
                         index_table: dynamodb.ITable) -> None:
        """Exactly what the jobs call (tests/infra/aws_calls.py lists the calls): Spark and the
        driver's boto3 list and read raw/ and raw-audit/, read fsimage/ (the inventory's
        ranged GETs), read and write curated/ (tables, watermarks, runs they replace) and
        quarantine/glue/; the compactions switch the events
        and audit tables' partitions. Written out rather than CDK's grant_read_write, which adds object lock,
        tagging, versions and bucket reads on every prefix."""
        listed = [names.RAW_PREFIX, names.AUDIT_RAW_PREFIX, names.CURATED_PREFIX, GLUE_QUARANTINE]
        read = [*listed, names.FSIMAGE_PREFIX]  # an image is named in the run's arguments
        write = [names.CURATED_PREFIX, GLUE_QUARANTINE]
        statements = [
            iam.PolicyStatement(sid="ListLake", actions=["s3:ListBucket"],
                                resources=[lake.bucket_arn],
                                conditions={"StringLike": {"s3:prefix": [
                                    q for p in listed for q in (p, f"{p}*")]}}),
            iam.PolicyStatement(sid="ReadLake", actions=["s3:GetObject"],
                                resources=[lake.arn_for_objects(f"{p}*") for p in read]),
            # Spark writes in parts and deletes its temporaries and superseded runs.
            iam.PolicyStatement(sid="WriteLake", actions=[
                "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                resources=[lake.arn_for_objects(f"{p}*") for p in write]),
            # Bookmarks are encrypted client-side and logs with the job key.
            iam.PolicyStatement(sid="UseJobKey", actions=[
                "kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"],
                resources=[self.glue_key.key_arn]),
            iam.PolicyStatement(sid="EncryptedJobLogs", actions=["logs:AssociateKmsKey"],
                                resources=[f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:"
                                           f"{Aws.ACCOUNT_ID}:log-group:/aws-glue/*"]),
            # glue_jobs/catalog.py GlueCatalog; Glue authorises a table call on the catalog,
            # the database and the table.
            iam.PolicyStatement(sid="PublishPartitions", actions=[
                "glue:GetTable", "glue:GetPartitions", "glue:BatchCreatePartition",
                "glue:BatchUpdatePartition"],
                resources=[f"arn:{Aws.PARTITION}:glue:{Aws.REGION}:{Aws.ACCOUNT_ID}:catalog",
                           self.database.database_arn,
                           self.events_table.table_arn, self.audit_table.table_arn,
                           self.attribution_table.table_arn, self.inventory_table.table_arn]),
            # glue_jobs/image_index.py: a first start's index from the image, written from the
            # executors (BatchWriteItem), the sequencer's position checked and put by the driver.
            iam.PolicyStatement(sid="WriteIndexFromImage", actions=[
                "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:BatchWriteItem"],
                resources=[index_table.table_arn]),
            # ... and the marker beside the image the agent waits for (names.fsimage_indexed_key).
            iam.PolicyStatement(sid="MarkImageIndexed", actions=["s3:PutObject"],
                                resources=[lake.arn_for_objects(IMAGE_INDEXED)]),
            # glue_jobs/attribution_log.py: a stream per run of the attribution job, its lines
            # put from the executors.
            iam.PolicyStatement(sid="LogAttributions", actions=[
                "logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.attribution_logs.log_group_arn]),
        ]
        if lake_key is not None:
            # S3 asks KMS as the caller: Decrypt to read, a data key to write.
            statements.append(iam.PolicyStatement(
                sid="UseLakeKey", actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=[lake_key.key_arn]))
        for statement in statements:
            self.role.add_to_policy(statement)

    def _acknowledge_role_findings(self, settings: DeploySettings) -> None:
        nag.ack(self.role, "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AWSGlueServiceRole]", "The AWS-maintained Glue service role policy (Glue's "
                "own CloudWatch, EC2 network interface and catalog calls); lake access is "
                "granted separately by prefix")
        for action in ("s3:GetBucket*", "s3:GetObject*", "s3:List*"):
            nag.ack(self.role, f"IAM5[Action::{action}]", "CDK's read grant of the job "
                    "scripts and library zip it uploads as assets (PySparkEtlJob), on the "
                    "asset bucket only")
        nag.ack_lake_prefixes(self.role, settings, [
            names.RAW_PREFIX, names.AUDIT_RAW_PREFIX, names.CURATED_PREFIX, GLUE_QUARANTINE,
            names.FSIMAGE_PREFIX])
        nag.ack(self.role, f"IAM5[Resource::{nag.lake_arn_as_nag_prints_it(settings)}/"
                f"{IMAGE_INDEXED}]", "The marker beside each image the job indexed "
                "(names.fsimage_indexed_key): the cluster and txid are the run's arguments")
        nag.ack(self.role, "IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:"
                "<AWS::AccountId>:log-group:/aws-glue/*]", "Glue names its job log groups under "
                "/aws-glue/ at run time; AssociateKmsKey encrypts them with the job key")
        nag.ack(self.role, "IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-"
                "<AWS::AccountId>-<AWS::Region>/*]", "Read access to the job scripts and library "
                "zip that CDK uploads as assets (content-hashed keys)")
