"""What differs between a run on AWS Glue and a local run: arguments, the Spark session, and
how Spark reaches S3.

On Glue (the `awsglue` package is importable) arguments come from getResolvedOptions and the
session from a GlueContext, inside Job.init/commit; Spark opens s3:// through Glue's own
connector, configured by Glue. Locally the same argument names are parsed by argparse and a local
SparkSession is built; Spark opens s3:// lake URIs through Hadoop's S3A connector (hadoop-aws and
the AWS SDK bundle it was built with, resolved by `make hadoop` into .hadoop/distcp/), configured
from the standard AWS environment (AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID...), so the
same job arguments reach moto server, MinIO or S3. Job code sees a dict of strings and a
SparkSession.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from glue_jobs.jvm_settings import JVM_SETTINGS

# The jobs' own boto3 calls: botocore's standard mode retries only failed calls (throttling, 5xx,
# connection errors) with backoff; 5 attempts in all ride out a burst of throttling.
AWS_RETRIES = {"mode": "standard", "max_attempts": 5}


@dataclass(frozen=True, slots=True)
class Arg:
    name: str  # without the leading "--", as Glue job parameters are named
    help: str
    default: str | None = None  # None: required


def on_glue() -> bool:
    try:
        import awsglue  # noqa: F401  (present only in the Glue runtime)
    except ImportError:
        return False
    return True


def resolve_args(argv: Sequence[str], spec: Sequence[Arg], *, prog: str) -> dict[str, str]:
    """{name: value} for every Arg; a missing required one exits with a message naming it."""
    if on_glue():
        from awsglue.utils import getResolvedOptions

        # getResolvedOptions requires every name it is given: pass the optional ones only
        # when the job run sets them, and fill in defaults after.
        present = [a.name for a in spec
                   if a.default is None or f"--{a.name}" in argv]
        names = ["JOB_NAME", *present] if "--JOB_NAME" in argv else present
        resolved = getResolvedOptions(list(argv), names)
        return {a.name: resolved.get(a.name, a.default) for a in spec} | (
            {"JOB_NAME": resolved["JOB_NAME"]} if "JOB_NAME" in resolved else {})
    parser = argparse.ArgumentParser(prog=prog)
    for a in spec:
        parser.add_argument(f"--{a.name}", required=a.default is None, default=a.default,
                            help=a.help + ("" if a.default is None else " (default: %(default)s)"))
    return {k: v for k, v in vars(parser.parse_args(list(argv))).items()}


# Where `make hadoop` puts hadoop-aws and its AWS SDK bundle (tests/kit/hadoop/pom.xml,
# execution distcp-client); S3A_JARS_DIR names another directory holding the same two jars.
S3A_JARS_DIR = Path(__file__).resolve().parent.parent / ".hadoop" / "distcp"
# Only these two: the Hadoop client they need (3.3.4) is the one inside the pyspark wheel.
_S3A_JARS = ("hadoop-aws-*.jar", "aws-java-sdk-bundle-*.jar")


def spark_scheme(scheme: str) -> str:
    """The scheme Spark opens for a lake URI's scheme. Glue reads s3:// itself; a local Spark
    has no s3:// file system, so s3:// goes through S3A, the connector Glue's s3:// stands for.
    The one place the mapping is made."""
    return "s3a" if scheme == "s3" and not on_glue() else scheme


class S3AJarsMissing(RuntimeError):
    pass


def s3a_jars(env: Mapping[str, str] = os.environ) -> list[str]:
    where = Path(env.get("S3A_JARS_DIR") or S3A_JARS_DIR)
    found = [sorted(where.glob(pattern)) for pattern in _S3A_JARS]
    if not all(found):
        raise S3AJarsMissing(f"S3A jars ({', '.join(_S3A_JARS)}) not found in {where}: run "
                             "`make hadoop`, or set S3A_JARS_DIR to a directory holding them")
    return [str(paths[-1]) for paths in found]


def s3a_conf(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Spark settings for s3a:// from the standard AWS environment; none is a secret (the
    credentials stay in the environment, read by the SDK's own provider)."""
    conf = {"spark.jars": ",".join(s3a_jars(env))}
    hadoop = {}
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        # A custom endpoint (moto server, MinIO) serves buckets by path, often over plain HTTP.
        hadoop |= {"fs.s3a.endpoint": endpoint, "fs.s3a.path.style.access": "true",
                   "fs.s3a.connection.ssl.enabled": str(endpoint.startswith("https:")).lower()}
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        hadoop["fs.s3a.endpoint.region"] = region
    if env.get("AWS_ACCESS_KEY_ID"):
        # Keys in the environment: take them from there. S3A's default chain would otherwise go
        # on to the EC2 instance metadata address when they are refused.
        hadoop["fs.s3a.aws.credentials.provider"] = \
            "com.amazonaws.auth.EnvironmentVariableCredentialsProvider"
    return conf | {f"spark.hadoop.{k}": v for k, v in hadoop.items()}


# Our own JVM code (glue_jobs/jvm: the compaction's parse_canonical_line), built by
# `make glue-jar`; GLUE_JOB_JAR names another copy. On Glue the job's --extra-jars carries it.
JOB_JAR = Path(__file__).resolve().parent / "jvm" / "target" / "hdfs-events-glue.jar"


class JobJarMissing(RuntimeError):
    pass


def job_jar(env: Mapping[str, str] = os.environ) -> str:
    where = Path(env.get("GLUE_JOB_JAR") or JOB_JAR)
    if not where.is_file():
        raise JobJarMissing(f"the jobs' jar {where} is not built: run `make glue-jar` (Maven and "
                            "Java 17), or set GLUE_JOB_JAR to a copy of it")
    return str(where)


def job_conf(*, s3a: bool = False, env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Spark settings of a local job session: the JVMs' settings a job has on Glue
    (JVM_SETTINGS), our jar on spark.jars, and with `s3a` S3A's settings and jars (s3a_conf).
    The JVM settings hold only for a session that starts its JVM (the first in a process)."""
    conf = s3a_conf(env) if s3a else {}
    jars = [job_jar(env), *filter(None, conf.get("spark.jars", "").split(","))]
    return JVM_SETTINGS | conf | {"spark.jars": ",".join(jars)}


def local_session(app_name: str, *, s3a: bool = False) -> SparkSession:
    """A local session sized for this machine; SPARK_MASTER overrides local[2]. It loads our
    jar, and with `s3a` Spark can open s3a:// URIs (job_conf)."""
    builder = (
        SparkSession.builder.master(os.environ.get("SPARK_MASTER", "local[2]"))
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", os.environ.get("SPARK_SHUFFLE_PARTITIONS", "8"))
    )
    for key, value in job_conf(s3a=s3a).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


@contextmanager
def job_session(app_name: str, args: dict[str, str], spark: SparkSession | None = None, *,
                uris: Sequence[str] = ()) -> Iterator[SparkSession]:
    """The job's SparkSession, able to open the Spark URIs `uris` (LakeStore.root_uri); on Glue
    the job is committed (bookmarks advance) only when the body returns without raising."""
    if spark is not None:  # a caller's session (tests, notebooks): used, not stopped
        yield spark
        return
    if on_glue():
        from awsglue.context import GlueContext
        from awsglue.job import Job
        from pyspark.context import SparkContext

        glue_context = GlueContext(SparkContext.getOrCreate())
        job = Job(glue_context)
        job.init(args.get("JOB_NAME", app_name), args)
        yield glue_context.spark_session
        job.commit()
        return
    session = local_session(app_name, s3a=any(u.startswith("s3a://") for u in uris))
    try:
        yield session
    finally:
        session.stop()
