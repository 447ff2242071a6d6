"""Session fixtures: the synthesized templates of dev, prod and local, by concern."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.infra.synth import synthesized

CONCERNS = ("Storage", "Ingest", "Analytics", "Monitoring")


@dataclass(frozen=True)
class Synthesized:
    env: str
    templates: dict[str, dict[str, Any]]  # by concern
    directory: Any

    def template(self, concern: str) -> Any:
        from aws_cdk.assertions import Template

        return Template.from_json(self.templates[concern])

    def resources(self, concern: str, type_: str) -> dict[str, dict[str, Any]]:
        return {k: r for k, r in self.templates[concern]["Resources"].items()
                if r["Type"] == type_}


def _load(env: str) -> Synthesized:
    assembly = synthesized()[env]
    by_concern = {s.name.rsplit("-", 1)[1]: s.template for s in assembly.stacks}
    assert sorted(by_concern) == sorted(CONCERNS)
    return Synthesized(env, by_concern, assembly.directory)


@pytest.fixture(scope="session")
def dev() -> Synthesized:
    return _load("dev")


@pytest.fixture(scope="session")
def prod() -> Synthesized:
    return _load("prod")


@pytest.fixture(scope="session")
def local() -> Synthesized:
    return _load("local")


@pytest.fixture(scope="session", params=["dev", "prod"])
def deployed_env(request: pytest.FixtureRequest) -> Synthesized:
    """dev and prod, for properties every real environment must have."""
    return _load(request.param)
