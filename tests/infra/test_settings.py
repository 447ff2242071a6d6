"""cdk.json settings: one typed object per environment; a wrong value names the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stacks.settings import DeploySettings, SettingsError, load_settings

CDK_JSON = Path(__file__).resolve().parents[2] / "cdk.json"


def _context(**env: object) -> dict:
    return {"environments": {"dev": {}, "test": env}}


def test_every_environment_of_cdk_json_loads() -> None:
    context = json.loads(CDK_JSON.read_text())["context"]
    loaded = {name: load_settings(context, name) for name in context["environments"]}
    assert set(loaded) == {"dev", "prod", "local"}
    assert loaded["prod"].retain_data and not loaded["dev"].retain_data
    assert loaded["prod"].lake_kms and loaded["prod"].lake_versioned
    local = loaded["local"]
    assert not local.consumer_mapping_enabled and not local.bootstrap_version_rule
    assert not local.powertools_layer and not local.roles_anywhere


def test_defaults_are_the_dev_settings() -> None:
    assert load_settings(_context(), "dev") == DeploySettings()
    assert load_settings({"env": "dev", "environments": {"dev": {}}}).prefix == "hdfs-events-dev"


@pytest.mark.parametrize(("env", "message"), [
    ({"max_recieve_count": 3}, "unknown setting(s) ['max_recieve_count']"),
    ({"max_receive_count": 0}, "test.max_receive_count: must be 1..1000"),
    ({"max_receive_count": True}, "test.max_receive_count: must be an integer"),
    ({"retain_data": "yes"}, "test.retain_data: must be true or false"),
    ({"clusters": "prod"}, "test.clusters: must be a list of strings"),
    ({"clusters": ["bad name"]}, "test.clusters: cluster name 'bad name' is not valid"),
    ({"clusters": ["a", "a"]}, "test.clusters: names must be unique"),
    ({"log_mode": "verbose"}, "test.log_mode: must be one of"),
    ({"log_retention_days": 31}, "test.log_retention_days: CloudWatch Logs allows"),
    ({"consumer_max_concurrency": 1}, "SQS event sources allow 2..1000"),
    ({"export_prefixes": ["/abs/"]}, "test.export_prefixes"),
    ({"glue_worker_type": "G.3X"}, "test.glue_worker_type: 'G.3X' cannot run"),
    ({"glue_worker_type": "G.025X"}, "test.glue_worker_type: 'G.025X' cannot run the Glue 5.1 "
     "Spark ETL jobs (G.025X is for streaming jobs only"),
    ({"glue_worker_type": "Z.2X"}, "test.glue_worker_type: 'Z.2X' cannot run"),
    ({"retain_data": True}, "test.auto_delete_objects: cannot be true when retain_data"),
    ({"index_prefixes": ["user"]}, "HDFS prefixes must be absolute paths"),
    ({"sync_destinations": ["other=s3://b-1/p/"]},
     "test.sync_destinations: 'other=s3://b-1/p/' is not '<cluster>=s3://bucket/prefix/' of a "
     "cluster in 'clusters'"),
    ({"sync_destinations": ["s3://b-1/p/"]}, "test.sync_destinations: 's3://b-1/p/' is not"),
    ({"sync_destinations": ["dev=b-1/p/"]}, "test.sync_destinations: 'b-1/p/' is not "
     "s3://bucket/prefix/"),
    ({"sync_destinations": ["dev=s3://Bad_Bucket/p/"]},
     "test.sync_destinations: 's3://Bad_Bucket/p/': 'Bad_Bucket' is not an S3 bucket name"),
    ({"sync_destinations": ["dev=s3://replica"]},
     "test.sync_destinations: 's3://replica': needs a prefix"),
    ({"sync_destinations": ["dev=s3://replica/a/*/"]}, "needs a prefix (s3://bucket/prefix/), "
     "without '*'"),
    ({"sync_bytes_pending_alarm": 0}, "test.sync_bytes_pending_alarm: must be >= 1"),
    ({"index_drift_alarm": -1}, "test.index_drift_alarm: must be >= 0"),
    ({"index_drift_missing_hours": 169}, "test.index_drift_missing_hours: must be 1..168"),
    ({"denied_access_alarm": -1}, "test.denied_access_alarm: must be >= 0"),
    ({"audit_lag_alarm_seconds": 59}, "test.audit_lag_alarm_seconds: must be >= 60"),
    ({"audit_lines_unparsed_alarm": -1}, "test.audit_lines_unparsed_alarm: must be >= 0"),
])
def test_a_bad_setting_names_the_key_and_cdk_json(env: dict, message: str) -> None:
    with pytest.raises(SettingsError) as excinfo:
        load_settings(_context(**env), "test")
    assert message in str(excinfo.value)
    assert str(excinfo.value).startswith("cdk.json: context.environments.test")


def test_unknown_environment_lists_the_known_ones() -> None:
    with pytest.raises(SettingsError, match=r"unknown environment 'qa'; known: dev, test"):
        load_settings(_context(), "qa")


def test_sync_destinations_give_each_cluster_its_buckets_and_prefixes() -> None:
    settings = load_settings(_context(clusters=["dev", "prod"], sync_destinations=[
        "prod=s3://customer-lake/hdfs/mirror", "prod=s3://archive.example/x/", "dev=s3://d-1/m/"]),
        "test")
    assert settings.sync_destinations_of("prod") == [("customer-lake", "hdfs/mirror/"),
                                                      ("archive.example", "x/")]
    assert settings.sync_destinations_of("dev") == [("d-1", "m/")]
    defaults = DeploySettings()
    assert defaults.sync_destinations == () and defaults.sync_bytes_pending_alarm == 10 * 2**30


def test_audit_alarm_thresholds_default_and_come_from_cdk_json() -> None:
    defaults = DeploySettings()
    assert (defaults.denied_access_alarm, defaults.audit_lag_alarm_seconds,
            defaults.audit_lines_unparsed_alarm) == (100, 3600, 0)
    settings = load_settings(_context(denied_access_alarm=5, audit_lag_alarm_seconds=60,
                                      audit_lines_unparsed_alarm=10), "test")
    assert (settings.denied_access_alarm, settings.audit_lag_alarm_seconds,
            settings.audit_lines_unparsed_alarm) == (5, 60, 10)


@pytest.mark.parametrize("worker_type", ["G.1X", "G.2X", "G.4X", "G.8X", "G.12X", "G.16X",
                                         "R.1X", "R.2X", "R.4X", "R.8X"])
def test_every_spark_etl_worker_type_is_accepted_and_known_to_cdk(worker_type: str) -> None:
    from aws_cdk import aws_glue as glue

    settings = load_settings(_context(glue_worker_type=worker_type), "test")
    # The analytics stack maps the setting to CDK's enum this way; an unknown name raises.
    assert glue.WorkerType(settings.glue_worker_type.replace(".", "_")).name == \
        worker_type.replace(".", "_")
