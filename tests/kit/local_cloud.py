"""The CDK app's own templates, deployed into moto server's CloudFormation.

`make demo`, the e2e tests and the benches on the local chain run on the resources users
deploy: this synthesizes the `local` environment of cdk.json (`app.py --env local`, in a
subprocess so no jsii/Node process stays behind), uploads the file assets where the CDK
bootstrap bucket would hold them, creates the stacks in dependency order, waits for
CREATE_COMPLETE and returns the stacks' outputs merged.

What moto does with the templates (moto 5.2): it creates the queues, IAM users/roles/policies
and access keys, tables, buckets, KMS keys, log groups, the Lambda function and its (disabled)
event source mapping, the SNS topic and the dashboard. It skips, with a warning, the types it
does not model: queue and bucket policies, Secrets Manager secrets, Roles Anywhere, Glue,
Athena, CloudWatch alarms, Logs query definitions and EventBridge rules of Glue metrics. An
output naming a skipped resource comes back as moto renders it (not a usable value).

Usage: python -m tests.kit.local_cloud [--env local] --endpoint http://127.0.0.1:5000
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from graphlib import TopologicalSorter
from pathlib import Path
from typing import Any

import boto3

REPO = Path(__file__).resolve().parents[2]
BOOTSTRAP_VERSION_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
BOOTSTRAP_VERSION = "30"  # what `cdk bootstrap` of aws-cdk 2.1148 writes; templates need >= 6
# CloudFormation takes at most 51,200 bytes inline; larger templates go through S3.
MAX_TEMPLATE_BODY = 51_200
CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]


@dataclass(frozen=True, slots=True)
class StackArtifact:
    name: str
    template: dict[str, Any]
    asset_manifest: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Assembly:
    directory: Path
    stacks: tuple[StackArtifact, ...]  # in deployment order

    def templates(self) -> dict[str, dict[str, Any]]:
        return {s.name: s.template for s in self.stacks}


class DeployError(RuntimeError):
    """A stack that did not reach CREATE_COMPLETE, with CloudFormation's reasons."""


# What would let a synth reach an account; with none of them and the config files at /dev/null,
# a synth that needed an account, a lookup or credentials fails.
CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                        "AWS_PROFILE", "AWS_DEFAULT_PROFILE")


def offline_env(context: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The environment `app.py` synthesizes in: no credentials, profile or endpoint, and
    `context` over cdk.json's keys, passed the way the CDK CLI passes `-c` values
    (CDK_CONTEXT_JSON, which aws-cdk-lib's App reads over the context its constructor got)."""
    env = {k: v for k, v in os.environ.items()
           if k not in CREDENTIAL_VARIABLES and k != "AWS_ENDPOINT_URL"}
    env.update(AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null",
               JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20")
    if context:
        env["CDK_CONTEXT_JSON"] = json.dumps(context)
    return env


def synth_command(env: str, outdir: Path) -> list[str]:
    """`make synth ENV=<env>`'s command (a subprocess, so no jsii/Node process stays behind)."""
    return [sys.executable, str(REPO / "app.py"), "--env", env, "--outdir", str(outdir)]


def synth(env: str = "local", outdir: Path | None = None,
          context: Mapping[str, Any] | None = None) -> Assembly:
    """Runs `app.py --env ENV` offline into `outdir` (a temporary directory by default)."""
    directory = Path(outdir) if outdir else Path(tempfile.mkdtemp(prefix=f"cdk-{env}-"))
    proc = subprocess.run(synth_command(env, directory), cwd=REPO, capture_output=True,
                          text=True, env=offline_env(context), timeout=600)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"cdk synth of {env!r} failed (exit {proc.returncode}):\n{tail}")
    return read_assembly(directory)


def read_assembly(directory: Path) -> Assembly:
    manifest = json.loads((directory / "manifest.json").read_text())
    artifacts = manifest["artifacts"]
    stack_names = [n for n, a in artifacts.items() if a["type"] == "aws:cloudformation:stack"]
    graph = {n: [d for d in artifacts[n].get("dependencies", []) if d in stack_names]
             for n in stack_names}
    stacks = []
    for name in TopologicalSorter(graph).static_order():
        artifact = artifacts[name]
        template = json.loads((directory / artifact["properties"]["templateFile"]).read_text())
        asset_manifest = None
        for dep in artifact.get("dependencies", []):
            if artifacts.get(dep, {}).get("type") == "cdk:asset-manifest":
                asset_file = artifacts[dep]["properties"]["file"]
                asset_manifest = json.loads((directory / asset_file).read_text())
        stack_name = artifact["properties"].get("stackName", artifact.get("displayName", name))
        stacks.append(StackArtifact(stack_name, template, asset_manifest))
    return Assembly(directory, tuple(stacks))


def deploy_to_moto(endpoint_url: str, env: str = "local", *,
                   assembly: Assembly | None = None, timeout_s: float = 120) -> dict[str, str]:
    """Deploys the stacks of `env` into the moto server at `endpoint_url`; returns the outputs
    of every stack merged (EventQueueUrl, LakeBucketName, StateTableName, ...)."""
    assembly = assembly or synth(env)
    session = boto3.session.Session()
    region = session.region_name or "us-east-1"
    clients = _Clients(session, endpoint_url)
    account = clients.get("sts").get_caller_identity()["Account"]
    # Harmless when the template has no bootstrap-version rule (local), needed when it has.
    clients.get("ssm").put_parameter(Name=BOOTSTRAP_VERSION_PARAMETER, Value=BOOTSTRAP_VERSION,
                                     Type="String", Overwrite=True)
    outputs: dict[str, str] = {}
    for stack in assembly.stacks:
        if stack.asset_manifest:
            _publish_assets(clients, assembly.directory, stack.asset_manifest, account, region)
        outputs.update(_create_stack(clients, stack, account, region, timeout_s))
    return outputs


class _Clients:
    def __init__(self, session: boto3.session.Session, endpoint_url: str) -> None:
        self._session, self._endpoint, self._made = session, endpoint_url, {}

    def get(self, service: str) -> Any:
        if service not in self._made:
            self._made[service] = self._session.client(service, endpoint_url=self._endpoint)
        return self._made[service]


def _substitute(text: str, account: str, region: str) -> str:
    return (text.replace("${AWS::AccountId}", account).replace("${AWS::Region}", region)
            .replace("${AWS::Partition}", "aws"))


def _publish_assets(clients: _Clients, directory: Path, manifest: dict[str, Any],
                    account: str, region: str) -> None:
    s3 = clients.get("s3")
    for asset in manifest.get("files", {}).values():
        source = directory / asset["source"]["path"]
        body = _zip_dir(source) if asset["source"].get("packaging") == "zip" else \
            source.read_bytes()
        for destination in asset["destinations"].values():
            bucket = _substitute(destination["bucketName"], account, region)
            _ensure_bucket(s3, bucket, region)
            s3.put_object(Bucket=bucket, Key=_substitute(destination["objectKey"], account,
                                                         region), Body=body)
    if manifest.get("dockerImages"):
        raise DeployError("the local environment has a Docker image asset; moto cannot "
                          "build it and there is no Docker engine here")


def _ensure_bucket(s3: Any, bucket: str, region: str) -> None:
    kwargs: dict[str, Any] = {"Bucket": bucket}
    if region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
    with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
        s3.create_bucket(**kwargs)


def _zip_dir(source: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(source).as_posix())
    return buffer.getvalue()


def _create_stack(clients: _Clients, stack: StackArtifact, account: str, region: str,
                  timeout_s: float) -> dict[str, str]:
    cfn = clients.get("cloudformation")
    body = json.dumps(stack.template)
    kwargs: dict[str, Any] = {"StackName": stack.name, "Capabilities": CAPABILITIES}
    if len(body) <= MAX_TEMPLATE_BODY:
        kwargs["TemplateBody"] = body
    else:
        bucket = f"cdk-hnb659fds-assets-{account}-{region}"
        _ensure_bucket(clients.get("s3"), bucket, region)
        key = f"templates/{stack.name}.json"
        clients.get("s3").put_object(Bucket=bucket, Key=key, Body=body.encode())
        kwargs["TemplateURL"] = f"https://{bucket}.s3.amazonaws.com/{key}"
    cfn.create_stack(**kwargs)
    deadline = time.monotonic() + timeout_s
    while True:
        described = cfn.describe_stacks(StackName=stack.name)["Stacks"][0]
        status = described["StackStatus"]
        if status == "CREATE_COMPLETE":
            break
        if not status.endswith("_IN_PROGRESS") or time.monotonic() > deadline:
            raise DeployError(f"stack {stack.name}: {status}; " + _failure_reasons(cfn, stack))
        time.sleep(0.2)
    # moto fills Outputs in only on a describe after the stack reached CREATE_COMPLETE.
    described = cfn.describe_stacks(StackName=stack.name)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])
            if not o["OutputKey"].startswith("ExportsOutput")}


def _failure_reasons(cfn: Any, stack: StackArtifact) -> str:
    events = cfn.describe_stack_events(StackName=stack.name)["StackEvents"]
    failed = [f"{e['LogicalResourceId']}: {e.get('ResourceStatusReason', '')}" for e in events
              if e["ResourceStatus"].endswith("FAILED")]
    return "; ".join(failed) or "no failed resource reported"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Deploy the CDK app into moto server.")
    parser.add_argument("--endpoint", required=True, help="moto server URL")
    parser.add_argument("--env", default="local")
    args = parser.parse_args(argv)
    outputs = deploy_to_moto(args.endpoint, args.env)
    for key in sorted(outputs):
        print(f"{key}={outputs[key]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
