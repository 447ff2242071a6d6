"""The CDK app deployed into a moto server that enforces IAM (tests/kit/iam_server.py), with
credentials of its own for every principal the templates create: a test runs a command as the
deployed on-prem user, the consumer role or the Glue role and sees what AWS would allow it.

Flow (`IamCloud.start()` then `deploy(assembly)`): authorization off; an administrator user
(`*` on `*`, the kit's own, standing in for whoever runs `cdk deploy`) and its key;
tests/kit/local_cloud.py deploys the stacks (moto's CloudFormation creates the users, roles, managed
and inline policies and attachments from the templates); the SQS queue policies moto's
CloudFormation skips are set from the same templates; each IAM user of the templates gets an
access key (the template's own key goes to Secrets Manager, which moto skips), each role is
assumed (standing in for the service its trust policy names: moto would not let a user assume a
role trusted by lambda.amazonaws.com); then authorization is switched on for every request.
No policy is written here: the principals act under exactly what the templates shipped.

What is enforced and what is not: see tests/kit/iam_server.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from tests.kit.local_cloud import CREDENTIAL_VARIABLES, Assembly, deploy_to_moto

REPO = Path(__file__).resolve().parents[2]
ADMIN = "kit-admin"
REGION = "eu-west-1"  # tests/conftest.py's fake region
DENIED = "IAM-DENIED"  # marks a denial's line in the server's stderr (tests/kit/iam_server.py)


@dataclass(frozen=True, slots=True)
class Principal:
    """One IAM identity of the deployed templates and credentials to act as it."""

    logical_id: str  # the template's logical id, e.g. "OnPremdemoUser8EC42085"
    name: str  # IAM user or role name
    arn: str
    access_key_id: str
    secret_access_key: str
    session_token: str | None = None

    def environ(self, endpoint: str) -> dict[str, str]:
        """The AWS variables a process needs to act as this principal (to merge into an
        environment from which `without_credentials` removed the others)."""
        env = {"AWS_ACCESS_KEY_ID": self.access_key_id,
               "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
               "AWS_ENDPOINT_URL": endpoint, "AWS_DEFAULT_REGION": REGION,
               "AWS_REGION": REGION}
        if self.session_token:
            env["AWS_SESSION_TOKEN"] = self.session_token
        return env

    def session(self) -> boto3.session.Session:
        return boto3.session.Session(aws_access_key_id=self.access_key_id,
                                     aws_secret_access_key=self.secret_access_key,
                                     aws_session_token=self.session_token, region_name=REGION)


def without_credentials(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in CREDENTIAL_VARIABLES}


class IamCloud:
    """A moto server of its own (IAM enforcement off until `deploy` ends), the admin, and the
    deployed principals."""

    def __init__(self, endpoint: str, log: Path) -> None:
        self.endpoint = endpoint
        self.log = log
        self.outputs: dict[str, str] = {}
        self.principals: dict[str, Principal] = {}
        self._admin: Principal | None = None

    @classmethod
    @contextmanager
    def start(cls, log: Path) -> Iterator[IamCloud]:
        """The server, its stderr (every request moto logs, and a 500's traceback) in `log`."""
        # AWS's managed policies loaded: the Glue role's template attaches AWSGlueServiceRole.
        with log.open("w") as log_file:
            proc = subprocess.Popen([sys.executable, "-m", "tests.kit.iam_server"], cwd=REPO,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=log_file, text=True,
                                    env={**os.environ, "MOTO_IAM_LOAD_MANAGED_POLICIES": "true"})
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line.startswith("ENDPOINT "):
                raise RuntimeError(f"tests.kit.iam_server did not start (exit {proc.poll()}): "
                                   f"see {log}")
            yield cls(line.split()[1], log)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    # --- before enforcement -----------------------------------------------------------------
    @property
    def admin(self) -> Principal:
        """The account's administrator (`*` on `*`); created on first use."""
        if self._admin is None:
            iam = self._bootstrap_client("iam")
            user = iam.create_user(UserName=ADMIN)["User"]
            iam.put_user_policy(UserName=ADMIN, PolicyName="everything", PolicyDocument=json.dumps(
                {"Version": "2012-10-17",
                 "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
            key = iam.create_access_key(UserName=ADMIN)["AccessKey"]
            self._admin = Principal(ADMIN, ADMIN, user["Arn"], key["AccessKeyId"],
                                    key["SecretAccessKey"])
        return self._admin

    def environ(self, principal: Principal) -> dict[str, str]:
        """This process's environment with `principal`'s credentials instead of any other:
        for a command run as that principal in a subprocess."""
        return without_credentials(os.environ) | principal.environ(self.endpoint)

    def client(self, service: str, principal: Principal | None = None) -> Any:
        """A boto3 client of this server acting as `principal` (the admin by default)."""
        return (principal or self.admin).session().client(service, endpoint_url=self.endpoint)

    # --- users the admin makes, and what a principal holds -----------------------------------
    def user_holding(self, name: str, *, managed: Sequence[str] = (),
                     inline: Mapping[str, Mapping[str, Any]] | None = None) -> Principal:
        """A new IAM user holding exactly the managed policies `managed` (ARNs: a shipped policy
        the customer attaches to whatever runs the cloud CLI) and the `inline` documents by
        name (a shipped policy's copy with a grant taken out, `without_action`), with a key."""
        iam = self.client("iam")
        arn = iam.create_user(UserName=name)["User"]["Arn"]
        for policy_arn in managed:
            iam.attach_user_policy(UserName=name, PolicyArn=policy_arn)
        for policy_name, document in (inline or {}).items():
            iam.put_user_policy(UserName=name, PolicyName=policy_name,
                                PolicyDocument=json.dumps(document))
        key = iam.create_access_key(UserName=name)["AccessKey"]
        return Principal(name, name, arn, key["AccessKeyId"], key["SecretAccessKey"])

    def policies_of(self, principal: Principal) -> tuple[list[str], dict[str, dict[str, Any]]]:
        """(managed policy ARNs, inline documents by name) a deployed user or role holds."""
        iam = self.client("iam")
        if ":role/" in principal.arn:
            attached = iam.list_attached_role_policies(RoleName=principal.name)
            names = iam.list_role_policies(RoleName=principal.name)["PolicyNames"]
            inline = {n: iam.get_role_policy(RoleName=principal.name, PolicyName=n)[
                "PolicyDocument"] for n in names}
        else:
            attached = iam.list_attached_user_policies(UserName=principal.name)
            names = iam.list_user_policies(UserName=principal.name)["PolicyNames"]
            inline = {n: iam.get_user_policy(UserName=principal.name, PolicyName=n)[
                "PolicyDocument"] for n in names}
        return [p["PolicyArn"] for p in attached["AttachedPolicies"]], {
            n: json.loads(d) if isinstance(d, str) else d for n, d in inline.items()}

    def policy_document(self, policy_arn: str) -> dict[str, Any]:
        """The default version's document of a managed policy."""
        iam = self.client("iam")
        version = iam.get_policy(PolicyArn=policy_arn)["Policy"]["DefaultVersionId"]
        document = iam.get_policy_version(PolicyArn=policy_arn, VersionId=version)[
            "PolicyVersion"]["Document"]
        return json.loads(document) if isinstance(document, str) else document

    def deploy(self, assembly: Assembly) -> dict[str, str]:
        """Deploys `assembly` as the admin, makes every principal's credentials, then switches
        IAM enforcement on. Returns the stacks' outputs."""
        admin_env = self.admin.environ(self.endpoint)
        saved = {k: os.environ.get(k) for k in (*CREDENTIAL_VARIABLES, *admin_env)}
        for key in CREDENTIAL_VARIABLES:
            os.environ.pop(key, None)
        os.environ.update(admin_env)
        try:
            self.outputs = deploy_to_moto(self.endpoint, assembly=assembly)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        for stack in assembly.stacks:
            resources = self._physical_ids(stack.name)
            self._attach_identity_policies(stack.template, resources)
            self._apply_queue_policies(stack.template, resources)
            self._make_credentials(stack.template, resources)
        self.enforce(True)
        return self.outputs

    def enforce(self, on: bool) -> None:
        """IAM enforcement on (every request) or off (moto's default), through moto's API."""
        request = urllib.request.Request(f"{self.endpoint}/moto-api/reset-auth",
                                         data=b"0" if on else b"inf", method="POST",
                                         # not a form: moto reads the raw body
                                         headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(request, timeout=30).read()

    def denials(self) -> list[str]:
        """Every request denied so far: "<principal> <action> <resource> (<why>)" (an S3
        denial names the access key id, as moto's S3 check knows no more)."""
        return [line.split(" ", 1)[1].rstrip() for line in self.log.read_text().splitlines()
                if line.startswith(DENIED + " ")]

    def assert_nothing_denied(self) -> None:
        denials = self.denials()
        assert not denials, f"{len(denials)} requests denied:\n" + "\n".join(denials)

    # --- principals --------------------------------------------------------------------------
    def principal(self, logical_id_prefix: str) -> Principal:
        """The deployed principal whose template logical id starts with `logical_id_prefix`
        (e.g. "OnPremdemoUser", "ConsumerRole", "JobRole")."""
        found = [p for p in self.principals.values()
                 if p.logical_id.startswith(logical_id_prefix)]
        if len(found) != 1:
            raise KeyError(f"{logical_id_prefix!r} names {len(found)} principals of "
                           f"{sorted(self.principals)}")
        return found[0]

    def _bootstrap_client(self, service: str) -> Any:
        # Before the admin exists: any key works while enforcement is off.
        return boto3.session.Session(aws_access_key_id="bootstrap",
                                     aws_secret_access_key="bootstrap",
                                     region_name=REGION).client(service,
                                                                endpoint_url=self.endpoint)

    def _physical_ids(self, stack: str) -> dict[str, tuple[str, str]]:
        cfn = self.client("cloudformation")
        # moto leaves the logical id out for some resource types (none a policy refers to).
        return {r["LogicalResourceId"]: (r["ResourceType"], r.get("PhysicalResourceId", ""))
                for r in cfn.describe_stack_resources(StackName=stack)["StackResources"]
                if "LogicalResourceId" in r}

    def _make_credentials(self, template: dict[str, Any],
                          resources: dict[str, tuple[str, str]]) -> None:
        iam, sts = self.client("iam"), self.client("sts")
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] == "AWS::IAM::User":
                name = resources[logical_id][1]
                key = iam.create_access_key(UserName=name)["AccessKey"]
                self.principals[logical_id] = Principal(
                    logical_id, name, iam.get_user(UserName=name)["User"]["Arn"],
                    key["AccessKeyId"], key["SecretAccessKey"])
            elif resource["Type"] == "AWS::IAM::Role":
                name = resources[logical_id][1]
                arn = iam.get_role(RoleName=name)["Role"]["Arn"]
                creds = sts.assume_role(RoleArn=arn, RoleSessionName="kit")["Credentials"]
                self.principals[logical_id] = Principal(
                    logical_id, name, arn, creds["AccessKeyId"], creds["SecretAccessKey"],
                    creds["SessionToken"])

    def _attach_identity_policies(self, template: dict[str, Any],
                                  resources: dict[str, tuple[str, str]]) -> None:
        """A user's or role's own ManagedPolicyArns, and a user's own Policies: moto's
        CloudFormation ignores them (it attaches only from the policy's side, a ManagedPolicy's
        or Policy's Users/Roles, and a role's inline Policies)."""
        iam = self.client("iam")
        for logical_id, resource in template["Resources"].items():
            kind = resource["Type"]
            if kind not in ("AWS::IAM::User", "AWS::IAM::Role"):
                continue
            props = self._resolve(resource["Properties"], resources)
            name = resources[logical_id][1]
            for arn in props.get("ManagedPolicyArns", []):
                if kind == "AWS::IAM::User":
                    iam.attach_user_policy(UserName=name, PolicyArn=arn)
                else:
                    iam.attach_role_policy(RoleName=name, PolicyArn=arn)
            for policy in props.get("Policies", []) if kind == "AWS::IAM::User" else []:
                iam.put_user_policy(UserName=name, PolicyName=policy["PolicyName"],
                                    PolicyDocument=json.dumps(policy["PolicyDocument"]))

    def _apply_queue_policies(self, template: dict[str, Any],
                              resources: dict[str, tuple[str, str]]) -> None:
        sqs = self.client("sqs")
        for resource in template["Resources"].values():
            if resource["Type"] != "AWS::SQS::QueuePolicy":
                continue
            props = self._resolve(resource["Properties"], resources)
            for queue_url in props["Queues"]:
                sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={
                    "Policy": json.dumps(props["PolicyDocument"])})

    def _resolve(self, value: Any, resources: dict[str, tuple[str, str]]) -> Any:
        """The intrinsic functions queue policies use, resolved against the deployed stack."""
        if isinstance(value, list):
            return [self._resolve(v, resources) for v in value]
        if not isinstance(value, dict):
            return value
        if "Ref" in value:
            pseudo = {"AWS::Partition": "aws", "AWS::Region": REGION,
                      "AWS::AccountId": self.admin.arn.split(":")[4]}
            if value["Ref"] in pseudo:
                return pseudo[value["Ref"]]
            kind, physical_id = resources[value["Ref"]]
            if kind == "AWS::IAM::ManagedPolicy" and not physical_id.startswith("arn:"):
                # Ref of a managed policy is its ARN; moto's physical id may be the name
                return self._managed_policy_arn(physical_id)
            return physical_id
        if "Fn::GetAtt" in value:
            logical_id, attribute = value["Fn::GetAtt"]
            return self._attribute(*resources[logical_id], attribute)
        if "Fn::Join" in value:
            separator, parts = value["Fn::Join"]
            return separator.join(self._resolve(parts, resources))
        if "Fn::ImportValue" in value:
            name = self._resolve(value["Fn::ImportValue"], resources)
            exports = self.client("cloudformation").list_exports()["Exports"]
            return next(e["Value"] for e in exports if e["Name"] == name)
        if any(k.startswith("Fn::") for k in value):
            raise ValueError(f"tests.kit.iam_cloud cannot resolve {value}")
        return {k: self._resolve(v, resources) for k, v in value.items()}

    def _managed_policy_arn(self, name: str) -> str:
        policies = self.client("iam").list_policies(Scope="Local")["Policies"]
        return next(p["Arn"] for p in policies if p["PolicyName"] == name)

    def _attribute(self, kind: str, physical_id: str, attribute: str) -> str:
        if (kind, attribute) == ("AWS::SQS::Queue", "Arn"):
            return self.client("sqs").get_queue_attributes(
                QueueUrl=physical_id, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        if (kind, attribute) == ("AWS::IAM::Role", "Arn"):
            return self.client("iam").get_role(RoleName=physical_id)["Role"]["Arn"]
        if (kind, attribute) == ("AWS::IAM::Role", "RoleId"):
            return self.client("iam").get_role(RoleName=physical_id)["Role"]["RoleId"]
        if (kind, attribute) == ("AWS::IAM::User", "Arn"):
            return self.client("iam").get_user(UserName=physical_id)["User"]["Arn"]
        raise ValueError(f"tests.kit.iam_cloud cannot resolve {kind}.{attribute}")


def without_action(document: Mapping[str, Any], sid: str | None,
                   action: str) -> dict[str, Any]:
    """A copy of a policy document with `action` taken out of statement `sid` (of every
    statement granting it when None: CDK's grant() writes statements without a Sid), the
    statement dropped if nothing is left; raises KeyError when the document does not grant it
    there."""
    statements = []
    found = False
    for statement in document["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [
            statement["Action"]]
        if sid in (None, statement.get("Sid")) and action in actions:
            found = True
            actions = [a for a in actions if a != action]
            if not actions:
                continue
            statement = {**statement, "Action": actions}
        statements.append(statement)
    if not found:
        raise KeyError(f"no statement {sid!r} granting {action}")
    return {**document, "Statement": statements}
