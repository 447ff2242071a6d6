"""The Glue jobs as they are deployed: each job's entry script and its --extra-py-files zip from
the synthesized cloud assembly, run with the job's default arguments from the template by a
clean Python 3.11 that holds only the zip and what Glue 5.1 provides (Spark 3.5's pyspark and
boto3; `make` builds them in .make/glue-runtime), against the template's Glue catalog and lake
bucket on moto server.

Glue 5.1 is Spark 3.5.6 on Python 3.11 (AWS Glue versions page); its s3:// connector is stood in
for by S3A (glue_jobs/runtime.py), so the Hadoop jars of `make hadoop` ride along as Java, not
Python. Glue's own special parameters (--job-language, --extra-py-files, --enable-*) are read
by Glue, not the script: the script gets the rest, as getResolvedOptions would hand it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest

from lambdas.ingest.lake import lake_objects
from tests.infra.synth import REPO, synthesized
from tests.kit.glue_template import (
    create_catalog,
    exported_names,
    job_arguments,
    pseudo_parameters,
    resolve,
    resources,
)
from tests.kit.ingest_builders import sample_events
from tests.kit.local_cloud import Assembly

pytestmark = pytest.mark.slow

GLUE_SITE = REPO / ".make" / "glue-runtime" / "site-packages"
RUN_AS_GLUE = Path(__file__).with_name("run_as_glue.py")
S3A_JARS = REPO / ".hadoop" / "distcp"
# 2015-01-13T08:00Z: the SQS SentTimestamp of the sample's message, the day of its edits.
SENT_MS = 1_421_136_000_000


@dataclass(frozen=True)
class GlueJob:
    name: str
    script: Path  # the entry script as the assembly ships it
    extra_py_files: Path
    extra_jars: Path | None  # Glue puts them on the JVM's classpath
    arguments: list[str]  # what the script gets in sys.argv


def deploy_catalog(assembly: Assembly) -> dict[str, GlueJob]:
    """Creates the template's Glue database and tables in moto; returns its jobs by name, with
    their assets mapped to the assembly's files."""
    analytics = next(s for s in assembly.stacks if s.name.endswith("-Analytics"))
    template = analytics.template
    sts = boto3.client("sts")
    imports = {k: v for s in assembly.stacks if s is not analytics
               for k, v in exported_names(s.template).items()}
    refs = create_catalog(boto3.client("glue"), template, {**pseudo_parameters(
        sts.get_caller_identity()["Account"], sts.meta.region_name), **imports})
    files = analytics.asset_manifest["files"]

    def asset(uri: str) -> Path:
        (asset_hash, _) = uri.rsplit("/", 1)[1].split(".", 1)
        return assembly.directory / files[asset_hash]["source"]["path"]

    arguments = job_arguments(template, refs)
    jobs = {}
    for props in resources(template, "AWS::Glue::Job").values():
        assert props["GlueVersion"] == "5.1"
        name = resolve(props["Name"], refs)
        jars = props["DefaultArguments"].get("--extra-jars")
        jobs[name] = GlueJob(
            name, asset(resolve(props["Command"]["ScriptLocation"], refs)),
            asset(resolve(props["DefaultArguments"]["--extra-py-files"], refs)),
            None if jars is None else asset(resolve(jars, refs)), arguments[name])
    return jobs


def write_raw(bucket: str) -> tuple[int, set[str]]:
    """The sample edit log's events in raw/ as the consumer writes them (one message); returns
    how many events and the days they fall in."""
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={
        "LocationConstraint": s3.meta.region_name})
    events = sample_events("demo")
    objects = lake_objects(events, [e.to_json() for e in events], dedup_id="demo-4-87-32",
                           sent_timestamp_ms=SENT_MS)
    for o in objects:
        s3.put_object(Bucket=bucket, Key=o.key, Body=o.body, ContentType="application/x-ndjson")
    return len(events), {re.search(r"/dt=([^/]+)/", o.key).group(1) for o in objects}


@pytest.fixture
def glue_site() -> Path:
    if not (GLUE_SITE.parent / ".installed").is_file():
        pytest.fail(f"{GLUE_SITE.parent} is missing: run `make {GLUE_SITE.parent}/.installed` "
                    "(a prerequisite of `make test`)")
    return GLUE_SITE


def test_deployed_entry_scripts_run_on_glue_modules_and_their_zip_only(
        moto_endpoint: str, glue_site: Path, tmp_path: Path) -> None:
    jobs = deploy_catalog(synthesized()["local"])
    compact, rollups = (jobs["hdfs-events-local-compact-events"],
                        jobs["hdfs-events-local-activity-rollups"])
    assert compact.extra_py_files == rollups.extra_py_files
    lake = dict(zip(compact.arguments[::2], compact.arguments[1::2], strict=True))["--source"]
    events, days = write_raw(lake.removeprefix("s3://"))

    # Spark's Python workers (the compaction's UDFs) get the zip as Glue gives it, through
    # --py-files, and start without site-packages either.
    worker = tmp_path / "python3.11"
    worker.write_text(f'#!/bin/sh\nexec {sys._base_executable} -S -s "$@"\n')
    worker.chmod(0o755)
    out = tmp_path / "modules.json"
    env = {
        "PATH": os.environ["PATH"], "HOME": str(tmp_path),
        **{k: os.environ[k] for k in ("JAVA_HOME", "SPARK_SUBMIT_OPTS") if k in os.environ},
        **{k: os.environ[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                      "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
                                      "AWS_ENDPOINT_URL")},
        "SPARK_HOME": str(glue_site / "pyspark"), "PYSPARK_PYTHON": str(worker),
        "PYSPARK_SUBMIT_ARGS": f"--py-files {compact.extra_py_files} pyspark-shell",
        "S3A_JARS_DIR": str(S3A_JARS), "SPARK_SHUFFLE_PARTITIONS": "2",
        # The compaction's --extra-jars asset, which Glue loads; locally the session adds it.
        "GLUE_JOB_JAR": str(compact.extra_jars),
    }
    proc = subprocess.run(
        [sys._base_executable, "-I", "-S", str(RUN_AS_GLUE), str(compact.extra_py_files),
         str(glue_site), str(out), str(compact.script), json.dumps(compact.arguments),
         str(rollups.script), json.dumps(rollups.arguments)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    reports = {r["job"]: r for r in (json.loads(line) for line in proc.stdout.splitlines()
                                     if line.startswith('{"job"'))}

    # What a user sees: every event compacted once, its partitions in the Glue catalog the
    # template declares, and the days rolled up.
    assert reports["compact_events"]["events_added"] == events
    assert reports["compact_events"]["quarantined_objects"] == 0
    database = dict(zip(compact.arguments[::2], compact.arguments[1::2],
                        strict=True))["--catalog_database"]
    partitions = boto3.client("glue").get_partitions(DatabaseName=database,
                                                     TableName="events")["Partitions"]
    assert sorted(p["Values"] for p in partitions) == sorted(["demo", d] for d in days)
    assert sorted(reports["activity_rollups"]["days"]) == sorted(days)
    # Every Python module the driver loaded was an entry script or came from the zip, the
    # modules Glue provides or the standard library: nothing from the repository or the dev
    # venv.
    stdlib = sysconfig.get_paths(vars={"installed_base": sys.base_prefix,
                                       "base": sys.base_prefix})["stdlib"]
    roots = (f"{compact.extra_py_files}/", f"{glue_site}/", f"{stdlib}/")
    modules = json.loads(out.read_text())
    assert [m for m in modules if not m.startswith(roots)
            and m not in (str(compact.script), str(rollups.script))] == []
    assert any(m.startswith(f"{compact.extra_py_files}/glue_jobs/") for m in modules)
