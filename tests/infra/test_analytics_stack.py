"""Glue catalog, jobs and schedule, and the Athena workgroup."""

from __future__ import annotations

import json
import re
import zipfile
from datetime import UTC, datetime

import pytest

from glue_jobs.jvm_settings import JVM_SETTINGS
from hdfs_events import lake_layout as layout
from hdfs_events.event import FIELDS
from hdfs_events.inventory_schema import INVENTORY_FILE_COLUMNS
from stacks.assets import GLUE_JOB_JAR, GLUE_SCRIPTS
from stacks.lake_catalog import NAMED_QUERIES
from tests.infra.conftest import Synthesized
from tests.kit.athena_tables import glue_tables, projected_partitions, trino_syntax_errors

pytestmark = pytest.mark.slow


def _jobs(s: Synthesized) -> dict[str, dict]:
    return {r["Properties"]["Name"]: r["Properties"]
            for r in s.resources("Analytics", "AWS::Glue::Job").values()}


def test_glue_jobs_run_glue_5_1_with_workers_from_settings(dev: Synthesized,
                                                           prod: Synthesized) -> None:
    for s, workers in ((dev, 2), (prod, 10)):
        jobs = _jobs(s)
        assert set(jobs) == {f"hdfs-events-{s.env}-compact-events",
                             f"hdfs-events-{s.env}-activity-rollups",
                             f"hdfs-events-{s.env}-compact-audit",
                             f"hdfs-events-{s.env}-attribute-events",
                             f"hdfs-events-{s.env}-namespace-inventory"}
        for job in jobs.values():
            assert job["GlueVersion"] == "5.1"  # the CDK default would be 4.0
            assert job["Command"]["Name"] == "glueetl"
            assert job["WorkerType"] == "G.1X"
            assert job["NumberOfWorkers"] == workers
            assert job["SecurityConfiguration"]
            args = job["DefaultArguments"]
            # The contract and the shared transforms ship as one zip for --extra-py-files.
            assert json.dumps(args["--extra-py-files"]).endswith('.zip"]]}')
            assert args["--catalog_database"] == {"Ref": next(iter(
                s.resources("Analytics", "AWS::Glue::Database")))}
            assert "hdfs-events-" in json.dumps(args["--target"])
            # The inventory reads the image its run names (--image), not a lake root.
            assert args.get("--source", args["--target"]) == args["--target"]
        inventory = jobs[f"hdfs-events-{s.env}-namespace-inventory"]["DefaultArguments"]
        assert inventory["--catalog_table"] == "namespace_inventory"
        assert "--image" not in inventory and "--cluster" not in inventory


def test_compaction_and_inventory_jobs_load_the_jobs_jar_as_extra_jars(dev: Synthesized
                                                                       ) -> None:
    """The compaction parses raw lines with our JVM expression, the inventory decodes the
    image's parts with our JVM decoder (glue_jobs/jvm): both ship the jar `make glue-jar`
    built, byte for byte, and only those jobs need it."""
    jobs = _jobs(dev)
    with_jars = {name for name, job in jobs.items() if "--extra-jars" in job["DefaultArguments"]}
    assert with_jars == {"hdfs-events-dev-compact-events",
                         "hdfs-events-dev-namespace-inventory"}
    manifest = json.loads((dev.directory / "HdfsEvents-dev-Analytics.assets.json").read_text())
    shipped = {a["source"]["path"]: dev.directory / a["source"]["path"]
               for a in manifest["files"].values()}
    (jar,) = [p for p in shipped.values() if p.suffix == ".jar"]
    assert jar.read_bytes() == GLUE_JOB_JAR.read_bytes()
    for name in with_jars:
        extra = json.dumps(jobs[name]["DefaultArguments"]["--extra-jars"])
        assert extra.endswith('.jar"]]}')


def test_scripts_are_the_entry_scripts_of_glue_jobs(dev: Synthesized) -> None:
    manifest = json.loads((dev.directory / "HdfsEvents-dev-Analytics.assets.json").read_text())
    shipped = [dev.directory / a["source"]["path"] for a in manifest["files"].values()]
    scripts = {p.read_text() for p in shipped if p.suffix == ".py"}
    assert scripts == {p.read_text() for p in GLUE_SCRIPTS.values()}
    (library,) = [p for p in shipped if p.suffix == ".zip"]
    with zipfile.ZipFile(library) as zf:
        listed = set(zf.namelist())
    assert {"hdfs_events/__init__.py", "hdfs_events/event.py", "glue_jobs/__init__.py",
            "glue_jobs/schema.py"} <= listed


def test_events_table_has_every_contract_field_and_cluster_dt_partitions(
        deployed_env: Synthesized) -> None:
    tables = {r["Properties"]["TableInput"]["Name"]: r["Properties"]["TableInput"]
              for r in deployed_env.resources("Analytics", "AWS::Glue::Table").values()}
    events = tables["events"]
    columns = [c["Name"] for c in events["StorageDescriptor"]["Columns"]]
    assert columns == [f for f in FIELDS if f != "cluster"]
    assert [k["Name"] for k in events["PartitionKeys"]] == ["cluster", "dt"]
    types = {c["Name"]: c["Type"] for c in events["StorageDescriptor"]["Columns"]}
    assert types["txid"] == "bigint" and types["index"] == "bigint"
    assert types["xattrs"] == "array<struct<namespace:string,name:string,value:string>>"
    assert "Parquet" in events["StorageDescriptor"]["InputFormat"]
    assert json.dumps(events["StorageDescriptor"]["Location"]).endswith('/curated/events/"]]}')
    inventory = tables["namespace_inventory"]
    assert [(c["Name"], c["Type"]) for c in inventory["StorageDescriptor"]["Columns"]] == list(
        INVENTORY_FILE_COLUMNS)
    assert [k["Name"] for k in inventory["PartitionKeys"]] == ["cluster", "image_date"]
    assert json.dumps(inventory["StorageDescriptor"]["Location"]).endswith(
        '/curated/namespace_inventory/"]]}')
    for rollup in ("activity_daily", "mass_deletes", "gaps_daily"):
        assert [k["Name"] for k in tables[rollup]["PartitionKeys"]] == ["dt"]
        assert json.dumps(tables[rollup]["StorageDescriptor"]["Location"]).endswith(
            f'/curated/{rollup}/"]]}}')


# Where each rollup table's days are written: the rollups job's output roots (rollup_run.py).
ROLLUP_PREFIXES = {layout.ACTIVITY_TABLE: layout.ACTIVITY_PREFIX,
                   layout.MASS_DELETES_TABLE: layout.MASS_DELETES_PREFIX,
                   layout.GAPS_TABLE: layout.GAPS_PREFIX}
PSEUDO = {"AWS::AccountId": "123456789012", "AWS::Region": "eu-west-1", "AWS::Partition": "aws"}


def test_every_table_has_partitions_athena_finds_where_the_jobs_write_them(
        deployed_env: Synthesized) -> None:
    tables = glue_tables(deployed_env.templates["Analytics"], PSEUDO)
    assert set(tables) == {layout.EVENTS_TABLE, layout.AUDIT_TABLE, layout.ATTRIBUTION_TABLE,
                           layout.INVENTORY_TABLE, *ROLLUP_PREFIXES}
    bucket = f"hdfs-events-{deployed_env.env}-lake-123456789012-eu-west-1"
    # events: registered by the compaction job (a partition's location is its latest run
    # folder), so no projection, which would make Athena ignore the registered locations.
    events = tables[layout.EVENTS_TABLE]
    assert not events.projected and "storage.location.template" not in events.parameters
    assert events.location == f"s3://{bucket}/{layout.EVENTS_PREFIX}"
    (compact,) = [j["DefaultArguments"] for name, j in _jobs(deployed_env).items()
                  if name.endswith("-compact-events")]
    assert compact["--catalog_table"] == layout.EVENTS_TABLE
    # audit: registered by its own compaction job, as events.
    audit = tables[layout.AUDIT_TABLE]
    assert not audit.projected and "storage.location.template" not in audit.parameters
    assert audit.location == f"s3://{bucket}/{layout.AUDIT_PREFIX}"
    (compact_audit,) = [j["DefaultArguments"] for name, j in _jobs(deployed_env).items()
                        if name.endswith("-compact-audit")]
    assert compact_audit["--catalog_table"] == layout.AUDIT_TABLE
    # attribution: registered by its job, as events.
    attribution = tables[layout.ATTRIBUTION_TABLE]
    assert not attribution.projected
    assert attribution.location == f"s3://{bucket}/{layout.ATTRIBUTION_PREFIX}"
    (attribute,) = [j["DefaultArguments"] for name, j in _jobs(deployed_env).items()
                    if name.endswith("-attribute-events")]
    assert attribute["--attribution_table"] == layout.ATTRIBUTION_TABLE
    # namespace_inventory: registered by its job per (cluster, image_date), as events.
    inventory = tables[layout.INVENTORY_TABLE]
    assert not inventory.projected
    assert inventory.location == f"s3://{bucket}/{layout.INVENTORY_PREFIX}"
    (take,) = [j["DefaultArguments"] for name, j in _jobs(deployed_env).items()
               if name.endswith("-namespace-inventory")]
    assert take["--catalog_table"] == layout.INVENTORY_TABLE
    # The rollup tables: projected day by day, each day where the job's partitionBy("dt")
    # writes it, from before the oldest inotify edit log up to tomorrow.
    now = datetime(2026, 11, 26, 23, 30, tzinfo=UTC)
    for name, prefix in ROLLUP_PREFIXES.items():
        table = tables[name]
        assert table.projected, name
        assert table.location == f"s3://{bucket}/{prefix}"
        days = projected_partitions(table, now)
        assert days[("2026-11-26",)] == f"s3://{bucket}/{prefix}dt=2026-11-26/"
        assert days[("2015-01-13",)] == f"s3://{bucket}/{prefix}dt=2015-01-13/"
        assert max(days) == ("2026-11-27",) and min(days) == ("2014-01-01",)
        assert len(days) == (datetime(2026, 11, 27) - datetime(2014, 1, 1)).days + 1


def test_compactions_run_on_a_schedule_then_the_attribution_then_the_rollups(
        deployed_env: Synthesized) -> None:
    triggers = [r["Properties"] for r in
                deployed_env.resources("Analytics", "AWS::Glue::Trigger").values()]
    by_type = {t["Type"]: t for t in triggers}
    jobs = {r["Properties"]["Name"]: k for k, r in
            deployed_env.resources("Analytics", "AWS::Glue::Job").items()}
    compact = jobs[f"hdfs-events-{deployed_env.env}-compact-events"]
    rollups = jobs[f"hdfs-events-{deployed_env.env}-activity-rollups"]
    assert by_type["SCHEDULED"]["Schedule"] == "cron(15 * * * ? *)"
    assert by_type["SCHEDULED"]["StartOnCreation"] is True
    audit = jobs[f"hdfs-events-{deployed_env.env}-compact-audit"]
    # The audit compaction on the same schedule, beside the events' (neither reads the other).
    assert by_type["SCHEDULED"]["Actions"] == [{"JobName": {"Ref": compact}},
                                               {"JobName": {"Ref": audit}}]
    conditional = [t for t in triggers if t["Type"] == "CONDITIONAL"]
    starts = {job: [t["Predicate"] for t in conditional
                    if t["Actions"] == [{"JobName": {"Ref": job}}]] for job in jobs.values()}

    def on(job: str, state: str) -> dict[str, object]:
        return {"JobName": {"Ref": job}, "LogicalOperator": "EQUALS", "State": state}

    # The attribution after both compactions (it reads both tables).
    attribute = jobs[f"hdfs-events-{deployed_env.env}-attribute-events"]
    assert starts[attribute] == [{"Logical": "AND", "Conditions": [
        on(compact, "SUCCEEDED"), on(audit, "SUCCEEDED")]}]
    # The rollups after the attribution however it ended (its users in the mass deletes), or,
    # when the audit compaction failed and no attribution ran, after the events compaction:
    # a failed audit side never stops the activity numbers, and never starts the rollups
    # twice in one workflow run (the attribution runs only after both compactions succeeded).
    ended = ("SUCCEEDED", "FAILED", "TIMEOUT", "STOPPED")
    def canonical(predicates: list[dict]) -> list[str]:
        return sorted(json.dumps(p, sort_keys=True) for p in predicates)

    assert canonical(starts[rollups]) == canonical(
        [{"Logical": "ANY", "Conditions": [on(attribute, s) for s in ended]}]
        + [{"Logical": "AND", "Conditions": [on(compact, "SUCCEEDED"), on(audit, s)]}
           for s in ended[1:]])
    # Each of the audit side's outcomes starts the rollups by exactly one trigger, and an
    # events compaction that did not succeed starts nothing after it.
    for audit_state in ended:
        for attribution_state in ended if audit_state == "SUCCEEDED" else (None,):
            done = {(compact, "SUCCEEDED"), (audit, audit_state),
                    (attribute, attribution_state)}
            fired = [p for p in starts[rollups] if _fires(p, done)]
            assert len(fired) == 1, (audit_state, attribution_state)
    for state in ended[1:]:
        done = {(compact, state), (audit, "SUCCEEDED")}
        assert not [p for job in (rollups, attribute) for p in starts[job] if _fires(p, done)]


def _fires(predicate: dict, done: set[tuple[str, str | None]]) -> bool:
    """Whether a trigger's predicate holds once the jobs ended in these states."""
    held = [(c["JobName"]["Ref"], c["State"]) in done for c in predicate["Conditions"]]
    return any(held) if predicate.get("Logical") == "ANY" else all(held)


def test_glue_security_configuration_encrypts_logs_bookmarks_and_output(
        prod: Synthesized) -> None:
    (config,) = prod.resources("Analytics", "AWS::Glue::SecurityConfiguration").values()
    enc = config["Properties"]["EncryptionConfiguration"]
    assert enc["CloudWatchEncryption"]["CloudWatchEncryptionMode"] == "SSE-KMS"
    assert enc["JobBookmarksEncryption"]["JobBookmarksEncryptionMode"] == "CSE-KMS"
    assert enc["S3Encryptions"][0]["S3EncryptionMode"] == "SSE-KMS"


def test_athena_workgroup_enforces_encrypted_results_and_has_the_named_queries(
        dev: Synthesized, prod: Synthesized) -> None:
    for s, option in ((dev, "SSE_S3"), (prod, "SSE_KMS")):
        (wg,) = s.resources("Analytics", "AWS::Athena::WorkGroup").values()
        config = wg["Properties"]["WorkGroupConfiguration"]
        assert config["EnforceWorkGroupConfiguration"] is True
        assert config["ResultConfiguration"]["EncryptionConfiguration"][
            "EncryptionOption"] == option
        queries = {r["Properties"]["Name"]: r["Properties"] for r in
                   s.resources("Analytics", "AWS::Athena::NamedQuery").values()}
        assert set(queries) == set(NAMED_QUERIES) >= {
            "mass-deletes-yesterday", "top-writers-by-directory", "small-files-report"}
        for query in queries.values():
            assert query["WorkGroup"] == f"hdfs-events-{s.env}"
    (wg,) = prod.resources("Analytics", "AWS::Athena::WorkGroup").values()
    assert wg["Properties"]["RecursiveDeleteOption"] is False


def test_every_saved_query_parses_in_trinos_own_parser() -> None:
    """Athena's engine is Trino: its parser (431, the last on Java 17) accepts every saved query.
    Spark SQL runs them on the demo's lake (tests/e2e/test_saved_queries.py)."""
    queries = {name: sql for name, (_, sql) in NAMED_QUERIES.items()}
    # What Spark alone accepts is refused: the check can tell the dialects apart.
    spark_only = {"backquoted": "SELECT `index` FROM events"}
    assert trino_syntax_errors(queries | spark_only).keys() == {"backquoted"}


def test_saved_queries_on_projected_tables_bound_the_day() -> None:
    # Athena lists every projected day a query does not rule out: ~4,700 per table since 2014.
    for name, (_, sql) in NAMED_QUERIES.items():
        if any(f"FROM {table}\n" in sql for table in ROLLUP_PREFIXES):
            assert re.search(r"\bWHERE dt (=|>=) CAST\(current_date - INTERVAL '\d+' DAY AS "
                             r"varchar\(10\)\)", sql), name


def test_audit_table_has_the_columns_the_audit_compaction_writes(
        deployed_env: Synthesized) -> None:
    from glue_jobs.audit_schema import AUDIT_FILE_SCHEMA

    tables = {r["Properties"]["TableInput"]["Name"]: r["Properties"]["TableInput"]
              for r in deployed_env.resources("Analytics", "AWS::Glue::Table").values()}
    audit = tables[layout.AUDIT_TABLE]
    columns = [(c["Name"], c["Type"]) for c in audit["StorageDescriptor"]["Columns"]]
    assert columns == [(f.name, f.dataType.simpleString()) for f in AUDIT_FILE_SCHEMA.fields]
    assert [k["Name"] for k in audit["PartitionKeys"]] == ["cluster", "dt"]
    assert "Parquet" in audit["StorageDescriptor"]["InputFormat"]


def test_attribution_table_has_the_columns_the_attribution_job_writes(
        deployed_env: Synthesized) -> None:
    from glue_jobs.attribution import ATTRIBUTION_SCHEMA

    tables = {r["Properties"]["TableInput"]["Name"]: r["Properties"]["TableInput"]
              for r in deployed_env.resources("Analytics", "AWS::Glue::Table").values()}
    table = tables[layout.ATTRIBUTION_TABLE]
    columns = [(c["Name"], c["Type"]) for c in table["StorageDescriptor"]["Columns"]]
    assert columns == [(f.name, f.dataType.simpleString()) for f in ATTRIBUTION_SCHEMA.fields
                       if f.name != "cluster"]
    assert [k["Name"] for k in table["PartitionKeys"]] == ["cluster", "dt"]


def test_glue_catalog_is_retained_in_prod(prod: Synthesized) -> None:
    prod.template("Analytics").has_resource("AWS::Glue::Database", {"DeletionPolicy": "Retain"})


def test_attribution_lines_go_to_a_log_group_of_their_own_that_only_the_job_writes(
        deployed_env: Synthesized) -> None:
    name = f"/hdfs-events-{deployed_env.env}/attribution"
    (group_id, group), = deployed_env.resources("Analytics", "AWS::Logs::LogGroup").items()
    assert group["Properties"]["LogGroupName"] == name
    (consumer,) = deployed_env.resources("Ingest", "AWS::Logs::LogGroup").values()
    assert group["Properties"]["RetentionInDays"] == consumer["Properties"]["RetentionInDays"]
    assert group["DeletionPolicy"] == consumer["DeletionPolicy"]

    args = {job: props["DefaultArguments"] for job, props in _jobs(deployed_env).items()}
    assert args[f"hdfs-events-{deployed_env.env}-attribute-events"]["--log_group"] == name
    assert sum("--log_group" in a for a in args.values()) == 1

    statements = [st for r in deployed_env.resources("Analytics", "AWS::IAM::Policy").values()
                  for st in r["Properties"]["PolicyDocument"]["Statement"]]
    on_group = [st for st in statements if group_id in json.dumps(st["Resource"])]
    assert on_group == [{"Sid": "LogAttributions", "Effect": "Allow",
                         "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                         "Resource": {"Fn::GetAtt": [group_id, "Arn"]}}]
    # No other grant reaches it: Glue's own logs:* grants are on /aws-glue/* only.
    for st in statements:
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        if any(a.startswith("logs:") for a in actions) and st is not on_group[0]:
            assert json.dumps(st["Resource"]).endswith(':log-group:/aws-glue/*"]]}'), st
    outputs = deployed_env.templates["Analytics"]["Outputs"]
    assert outputs["AttributionLogGroupName"]["Value"] == name


def test_every_job_starts_its_jvms_with_the_settings_a_local_job_session_has(
        dev: Synthesized, prod: Synthesized) -> None:
    """The collector the jobs were measured with (glue_jobs.runtime.JVM_SETTINGS, in every local
    job session through job_conf) is the one Glue starts their JVMs with: each job's --conf
    holds those settings, pair for pair, in spark-submit's form."""
    for s in (dev, prod):
        for name, job in _jobs(s).items():
            conf = job["DefaultArguments"]["--conf"]
            pairs = dict(pair.split("=", 1) for pair in conf.split(" --conf "))
            assert pairs == JVM_SETTINGS, name
