"""What differs between a run on AWS Glue and a local run: arguments and the Spark session.

On Glue (the `awsglue` package is importable) arguments come from getResolvedOptions and the
session from a GlueContext, inside Job.init/commit. Locally the same argument names are parsed by
argparse and a local SparkSession is built. Job code sees a dict of strings and a SparkSession.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from pyspark.sql import SparkSession


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


def local_session(app_name: str) -> SparkSession:
    """A local session sized for this machine; SPARK_MASTER overrides local[2]."""
    return (
        SparkSession.builder.master(os.environ.get("SPARK_MASTER", "local[2]"))
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", os.environ.get("SPARK_SHUFFLE_PARTITIONS", "8"))
        .getOrCreate()
    )


@contextmanager
def job_session(app_name: str, args: dict[str, str],
                spark: SparkSession | None = None) -> Iterator[SparkSession]:
    """The job's SparkSession; on Glue the job is committed (bookmarks advance) only when the
    body returns without raising."""
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
    session = local_session(app_name)
    try:
        yield session
    finally:
        session.stop()
