"""cdk-nag (AwsSolutions) guards the app: the shipped stacks synthesize with zero unacknowledged
findings (the session synth of dev, prod and local would fail otherwise), and a new finding
fails the synth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App
from aws_cdk import aws_iam as iam

from stacks.product import compose
from stacks.settings import load_settings
from tests.infra.conftest import Synthesized

pytestmark = pytest.mark.slow

CDK_JSON = Path(__file__).resolve().parents[2] / "cdk.json"


def test_a_new_wildcard_on_the_onprem_principal_fails_the_synth(tmp_path: Path) -> None:
    context = json.loads(CDK_JSON.read_text())["context"]
    app = App(outdir=str(tmp_path), context=context)
    product = compose(app, load_settings(context, "dev"))
    product.ingest.principals[0].policy.add_statements(iam.PolicyStatement(
        actions=["s3:Get*"], resources=["arn:aws:s3:::some-other-bucket/*"]))

    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()

    report = json.loads((tmp_path / "validation-report.json").read_text())
    violations = [(v["ruleName"], r["constructPath"])
                  for plugin in report["pluginReports"] for v in plugin["violations"]
                  for r in v["violatingConstructs"]]
    assert violations, report
    assert {path for _, path in violations} == {"HdfsEvents-dev-Ingest/OnPrem-dev/Policy/Resource"}
    assert all("IAM5" in rule for rule, _ in violations)


@pytest.mark.parametrize("env", ["dev", "prod", "local"])
def test_shipped_stacks_have_no_unacknowledged_finding_and_each_ack_a_reason(
        env: str, dev: Synthesized, prod: Synthesized, local: Synthesized) -> None:
    synthesized = {"dev": dev, "prod": prod, "local": local}[env]
    report = json.loads((synthesized.directory / "validation-report.json").read_text())
    (plugin,) = report["pluginReports"]
    assert plugin["pluginName"] == "AwsSolutions"
    assert plugin["conclusion"] == "success"
    assert plugin["violations"] == []
    suppressed = plugin["suppressedViolations"]
    assert len(suppressed) >= 10
    for finding in suppressed:
        assert finding["acknowledgedId"].startswith("AwsSolutions::AwsSolutions-")
        assert len(finding["reason"]) > 30, finding["acknowledgedId"]
