"""The Glue jobs over the lake: the two compactions, the attribution, the rollups, and the
namespace inventory of an fsimage. Each runs one of glue_jobs/'s entry scripts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam

from glue_jobs.jvm_settings import glue_conf_argument
from hdfs_events import lake_layout as layout
from stacks.assets import glue_job_jar, glue_library_zip, glue_script
from stacks.settings import DeploySettings


class LakeJobs:
    """Not a Construct: each job keeps the stack as its scope, so its CloudFormation logical ID
    stays the one already deployed (a new ID would recreate the job and lose its run history
    and bookmarks)."""

    def __init__(self, stack: Stack, *, settings: DeploySettings, job_names: Mapping[str, str],
                 role: iam.IRole, security: glue.ISecurityConfiguration, lake_uri: str,
                 database_name: str, index_table: dynamodb.ITable,
                 attribution_log_group_name: str) -> None:
        self._stack = stack
        self._names = job_names
        library = glue.Code.from_asset(str(glue_library_zip()))
        workers = glue.WorkerConfiguration(
            worker_type=glue.WorkerType(settings.glue_worker_type.replace(".", "_")),
            number_of_workers=settings.glue_workers)
        self._common: dict[str, Any] = {
            "role": role, "glue_version": glue.GlueVersion.V5_1,
            "worker_configuration": workers, "extra_python_files": [library],
            "security_configuration": security,
            "timeout": Duration.minutes(settings.glue_timeout_minutes),
            # One run at a time: the watermark and partition switches assume it.
            "max_concurrent_runs": 1, "max_retries": 1,
            "enable_metrics": True, "enable_observability_metrics": True,
            "continuous_logging": glue.ContinuousLoggingProps(enabled=True),
        }
        # Lake roots: each job derives raw/, curated/ and quarantine/glue/ from them.
        lake = {"--source": lake_uri, "--target": lake_uri, "--catalog_database": database_name}

        self.compact_job = self._job(
            "CompactEvents", "compact",
            "raw/ JSON lines -> curated/events Parquet, deduplicated",
            # Our JVM parser of raw lines (glue_jobs/contract_sql.parse_canonical_line).
            with_jar=True, arguments=lake | {"--catalog_table": layout.EVENTS_TABLE})
        # No --from_dt/--to_dt: each run rolls up the days the compaction runs marked since the
        # last one (glue_jobs/rollup_days.py), so its cost follows the new data, not the lake's
        # age. A range by hand is a job run's own --from_dt/--to_dt.
        self.rollups_job = self._job(
            "ActivityRollups", "rollups",
            "curated/events -> daily activity and mass-delete tables",
            arguments=lake | {
                "--prefix_depth": str(settings.rollup_prefix_depth),
                "--small_file_bytes": str(settings.small_file_bytes),
                "--mass_delete_threshold": str(settings.mass_delete_threshold),
                "--catalog_table": layout.EVENTS_TABLE,
                # Who made each mass delete (the attribution job's table).
                "--attribution_table": layout.ATTRIBUTION_TABLE,
            })
        self.compact_audit_job = self._job(
            "CompactAudit", "compact_audit",
            "raw-audit/ JSON lines -> curated/audit Parquet, one row per audit line",
            arguments=lake | {"--catalog_table": layout.AUDIT_TABLE})
        self.attribute_job = self._job(
            "AttributeEvents", "attribute_events",
            "curated/events x curated/audit -> curated/attribution (who made each event)",
            arguments=lake | {
                "--events_table": layout.EVENTS_TABLE,
                "--audit_table": layout.AUDIT_TABLE,
                "--attribution_table": layout.ATTRIBUTION_TABLE,
                "--log_group": attribution_log_group_name,
            })
        # Run per image, not on the schedule: after `hdfs-events-agent fetch-image`, with
        # --image and --cluster (docs/fsimage.md). The agent's first start from the image
        # starts it and the run writes the index of the consumer's prefixes too (first start
        # only: refused once the cluster has a sequencer position).
        self.inventory_job = self._job(
            "NamespaceInventory", "namespace_inventory",
            "fsimage/ -> curated/namespace_inventory (one row per path)",
            # Our JVM decoder of the image's parts (glue_jobs/jvm: FsImageParts).
            with_jar=True, arguments={
                "--target": lake_uri,
                "--catalog_database": database_name,
                "--catalog_table": layout.INVENTORY_TABLE,
                "--index_table": index_table.table_name,
                "--index_prefixes": ",".join(settings.index_prefixes),
            })

    @property
    def all(self) -> tuple[glue.PySparkEtlJob, ...]:
        return (self.compact_job, self.rollups_job, self.compact_audit_job,
                self.attribute_job, self.inventory_job)

    def _job(self, job_id: str, script: str, description: str, *, arguments: dict[str, str],
             with_jar: bool = False) -> glue.PySparkEtlJob:
        # Every job's JVMs start with the settings of a local job session (glue_jobs/
        # jvm_settings.py: the Parallel collector, and why); Glue hands --conf to spark-submit.
        jvm = {"--conf": glue_conf_argument()}
        jars = [glue.Code.from_asset(str(glue_job_jar()))] if with_jar else None
        return glue.PySparkEtlJob(
            self._stack, job_id, job_name=self._names[job_id], description=description,
            script=glue.Code.from_asset(str(glue_script(script))), extra_jars=jars,
            default_arguments=jvm | arguments, **self._common)
