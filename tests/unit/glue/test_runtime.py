"""Local argument handling uses the names a Glue job run passes."""

from __future__ import annotations

import pytest

from glue_jobs import activity_rollups, compact_events
from glue_jobs.jvm_settings import JVM_SETTINGS
from glue_jobs.runtime import (
    JobJarMissing,
    S3AJarsMissing,
    job_conf,
    on_glue,
    resolve_args,
    s3a_conf,
    spark_scheme,
)


def test_local_runs_take_glue_style_arguments_with_defaults():
    assert not on_glue()
    args = resolve_args(["--source", "file:///l", "--target", "file:///l", "--lookback_days", "2"],
                        compact_events.SPEC, prog="compact_events")
    assert args["source"] == "file:///l" and args["lookback_days"] == "2"
    assert args["compression"] == "zstd" and args["catalog_database"] == ""
    settings = compact_events.settings_from(args)
    assert settings.lookback_days == 2 and settings.target_file_bytes == 128 * 1_048_576


def test_a_missing_required_argument_is_named(capsys):
    with pytest.raises(SystemExit):
        resolve_args(["--source", "file:///l"], activity_rollups.SPEC, prog="activity_rollups")
    assert "--target" in capsys.readouterr().err


def test_a_bad_number_is_named():
    args = resolve_args(["--source", "a", "--target", "b", "--prefix_depth", "two"],
                        activity_rollups.SPEC, prog="activity_rollups")
    with pytest.raises(SystemExit, match="two"):
        activity_rollups.settings_from(args)


def test_local_s3a_settings_come_from_the_aws_environment(tmp_path):
    for jar in ("hadoop-aws-3.3.4.jar", "aws-java-sdk-bundle-1.12.262.jar", "other.jar"):
        (tmp_path / jar).write_bytes(b"")
    env = {"S3A_JARS_DIR": str(tmp_path), "AWS_ENDPOINT_URL": "http://127.0.0.1:5000",
           "AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    conf = s3a_conf(env)
    assert conf["spark.jars"].split(",") == [str(tmp_path / "hadoop-aws-3.3.4.jar"),
                                             str(tmp_path / "aws-java-sdk-bundle-1.12.262.jar")]
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:5000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith(
        "EnvironmentVariableCredentialsProvider")
    assert "s" not in conf.values() and "k" not in conf.values()  # keys stay in the env


def test_without_an_endpoint_s3a_keeps_its_aws_defaults(tmp_path):
    for jar in ("hadoop-aws-3.3.4.jar", "aws-java-sdk-bundle-1.12.262.jar"):
        (tmp_path / jar).write_bytes(b"")
    conf = s3a_conf({"S3A_JARS_DIR": str(tmp_path)})
    assert set(conf) == {"spark.jars"}


def test_missing_s3a_jars_are_named_with_the_make_target(tmp_path):
    with pytest.raises(S3AJarsMissing, match=r"hadoop-aws.*make hadoop"):
        s3a_conf({"S3A_JARS_DIR": str(tmp_path)})


def test_s3_is_opened_through_s3a_locally_and_nothing_else_is_mapped():
    assert [spark_scheme(s) for s in ("s3", "s3a", "file")] == ["s3a", "s3a", "file"]


def test_a_local_job_session_loads_the_jobs_jar_before_s3a_jars(tmp_path):
    for jar in ("hadoop-aws-3.3.4.jar", "aws-java-sdk-bundle-1.12.262.jar", "ours.jar"):
        (tmp_path / jar).write_bytes(b"")
    env = {"S3A_JARS_DIR": str(tmp_path), "GLUE_JOB_JAR": str(tmp_path / "ours.jar")}
    assert job_conf(env=env) == JVM_SETTINGS | {"spark.jars": str(tmp_path / "ours.jar")}
    assert job_conf(s3a=True, env=env)["spark.jars"].split(",") == [
        str(tmp_path / "ours.jar"), str(tmp_path / "hadoop-aws-3.3.4.jar"),
        str(tmp_path / "aws-java-sdk-bundle-1.12.262.jar")]


def test_a_jobs_jar_not_built_is_named_with_the_make_target(tmp_path):
    with pytest.raises(JobJarMissing, match=r"ours.jar is not built: run `make glue-jar`"):
        job_conf(env={"GLUE_JOB_JAR": str(tmp_path / "ours.jar")})
