"""cfn-lint, AWS's CloudFormation linter, on every synthesized template of every environment: what
CloudFormation would reject at deploy time (a wrong property, type, enum value or reference, a
resource type or attribute a region lacks) fails here first, offline."""

from __future__ import annotations

from pathlib import Path

import pytest
from cfnlint.api import ManualArgs, Match, lint_file

from tests.infra.synth import ENVIRONMENTS, synthesized

pytestmark = pytest.mark.slow

# cfn-lint's default region (where bench/cost_model.py prices the bill) and the tests' region: a
# resource type or property missing in either is an error there.
REGIONS = ["us-east-1", "eu-west-1"]
# Warnings we accept, each with why; any other warning fails like an error.
ACCEPTED_WARNINGS = {
    # CDK orders a function after its role's default policy with DependsOn on the role as well
    # as the GetAtt it already has: redundant, harmless, and not ours to change.
    "W3005",
}


def _findings(env: str) -> list[Match]:
    directory = Path(synthesized()[env].directory)
    templates = sorted(directory.glob("*.template.json"))
    assert len(templates) == 4, templates  # Storage, Ingest, Analytics, Monitoring
    found: list[Match] = []
    for template in templates:
        found += lint_file(template, config=ManualArgs(regions=REGIONS))
    return found


def _line(match: Match) -> str:
    return f"{Path(match.filename).name}:{match.linenumber} {match.rule.id} {match.message}"


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_every_template_passes_cfn_lint(env: str) -> None:
    # Errors always count; warnings unless accepted above; informational findings (I...) never.
    problems = [m for m in _findings(env)
                if m.rule.severity == "error"
                or (m.rule.id not in ACCEPTED_WARNINGS and not m.rule.id.startswith("I"))]
    assert not problems, "cfn-lint:\n" + "\n".join(_line(m) for m in problems)


def test_cfn_lint_reports_a_template_cloudformation_would_reject(tmp_path: Path) -> None:
    # Guards the check above: the linter must actually read and judge templates.
    bad = tmp_path / "bad.template.json"
    bad.write_text('{"Resources": {"Q": {"Type": "AWS::SQS::Queue", '
                   '"Properties": {"VisibilityTimeout": "ten"}}}}')
    ids = {m.rule.id for m in lint_file(bad, config=ManualArgs(regions=REGIONS))}
    assert any(i.startswith("E") for i in ids), ids
