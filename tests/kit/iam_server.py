"""A moto server that enforces IAM the way AWS would for the calls our principals make, run in
a process of its own (`python -m tests.kit.iam_server`; tests/kit/iam_cloud.py starts it), so
the in-process moto of unit tests and the shared moto server stay as they are.

What moto 5.2 itself enforces once `/moto-api/reset-auth` switches authorization on: every
request must carry an access key of a moto IAM user or STS assumed role and a valid SigV4
signature; the action (`<signing name>:<API name>`, wildcards matched) must be allowed, and not
denied, by the caller's identity policies (user inline + managed + group; role inline +
managed), on the resource moto finds ("*" for all but SQS queues, S3 buckets and objects, STS
AssumeRole's role and IAM role calls); AssumeRole also checks the role's trust policy.
What this module adds (patched at moto's two authorization points, normal and S3 requests, in
this process only; tests/kit/iam_requests.py says what a request asks for):
- Resources: DynamoDB tables and indexes (every table of a Batch*/Transact* call), SNS topics,
  IAM users (UserName calls), SQS GetQueueUrl's queue, Glue's catalog, database and table (a
  table call needs all three): a grant on a table ARN now allows, and one on another table
  denies.
- Action names: IAM's, not moto's: `cloudwatch:` (signs as `monitoring`); SQS `*Batch` calls
  are their single actions (moto alone denies SendMessageBatch to a sender granted
  SendMessage, which AWS allows); Transact* calls are their item actions.
- Conditions of identity policies: a request moto allows must also satisfy the Condition of an
  allowing statement, with `dynamodb:LeadingKeys` (Key, Item, batch keys, the Query's partition
  key value), `s3:prefix` (listings) and `cloudwatch:namespace` (PutMetricData) supplied;
  a statement that applies with any other key fails loudly (tests/kit/iam_conditions.py).
- S3 signatures over exactly the headers SignedHeaders names (the Java SDK under S3A signs
  User-Agent, which botocore's signer, and so moto, leaves out).
- Resource policies: the Deny statements of an SQS queue's policy (set with
  SetQueueAttributes), with aws:PrincipalArn and aws:userid; `aws:SecureTransport` is "true"
  (the agents reach AWS over HTTPS, only this stand-in is HTTP).
Not enforced at all: bucket policies, Allow statements of resource policies (same-account
callers need none), KMS key policies and the KMS calls S3 and SNS make on a caller's behalf
(so `kms:ViaService` is never evaluated), S3 CopyObject's read of its source, identity
Deny statements' conditions (moto applies such a Deny unconditionally; our policies have none),
and trust policies of service roles (the kit assumes them before switching authorization on,
standing in for the service).

Prints `ENDPOINT http://127.0.0.1:<port>` once listening, and exits when its stdin closes, so it
never outlives the test process that started it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import xmltodict
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import HTTPHeaders
from moto import settings
from moto.core.authorization import ActionAuthenticatorMixin
from moto.core.exceptions import AccessDeniedError
from moto.iam.access_control import IAMPolicy, IAMRequest, S3IAMRequest, create_access_key
from moto.iam.models import iam_backends
from moto.s3.exceptions import S3AccessDeniedError
from moto.sqs.models import sqs_backends
from moto.sts.models import sts_backends

from tests.kit.iam_cloud import DENIED
from tests.kit.iam_conditions import allow_applies, deny_applies
from tests.kit.iam_requests import CHECKS, Check, s3_context


class _Caller:
    """Who signed the request: its principal ARN and unique id, as IAM's context names them."""

    def __init__(self, account: str, access_key_id: str) -> None:
        for user in iam_backends[account]["aws"].users.values():
            if any(k.access_key_id == access_key_id for k in user.access_keys):
                self.principal_arn, self.userid = user.arn, user.id
                return
        for role in sts_backends[account]["aws"].assumed_roles:
            if role.access_key_id == access_key_id:
                # aws:PrincipalArn of a role session is the role's ARN, not the session's.
                self.principal_arn, self.userid = role.role_arn, role.user_id
                return
        raise LookupError(access_key_id)  # unreachable: IAMRequest authenticated it

    def context(self, account: str, keys: dict[str, Any]) -> dict[str, Any]:
        """The request context: the caller's global keys and the service's `keys`."""
        return {"aws:PrincipalArn": self.principal_arn, "aws:userid": self.userid,
                "aws:PrincipalAccount": account, "aws:SecureTransport": "true", **keys}


def _identity_statements(response: Any) -> list[dict[str, Any]]:
    """Every statement of the caller's identity policies, as moto collects them."""
    key = create_access_key(account_id=response.current_account, partition="aws",
                            access_key_id=response.get_access_key(), headers=response.headers)
    statements: list[dict[str, Any]] = []
    for policy in key.collect_policies():
        document = IAMPolicy(policy)._policy_json["Statement"]
        statements += document if isinstance(document, list) else [document]
    return statements


def _denial(response: Any, check: Check) -> str | None:
    """Why moto's allow does not stand, else None: no allowing statement's Condition holds,
    or the queue policy's explicit Deny applies."""
    action, arn, keys = check
    if action == "sts:GetCallerIdentity":  # needs no permission (moto agrees)
        return None
    context = _Caller(response.current_account, response.get_access_key()).context(
        response.current_account, keys)
    if not allow_applies(_identity_statements(response), action=action, resource=arn,
                         context=context):
        shown = ", ".join(f"{k}={v}" for k, v in keys.items())
        return f"no allowing statement's condition holds ({shown})"
    if response.service_name != "sqs" or arn == "*":
        return None
    queue = next((q for q in sqs_backends[response.current_account][response.region]
                  .queues.values() if q.queue_arn == arn), None)
    if queue is None or not queue.policy:
        return None
    sid = deny_applies(json.loads(queue.policy)["Statement"], action=action, resource=arn,
                       context=context)
    return None if sid is None else f"explicit deny in the queue policy ({sid})"


def _authorize(self: Any, resource: str = "*") -> None:
    """Replaces ActionAuthenticatorMixin._authenticate_and_authorize_normal_action."""
    if ActionAuthenticatorMixin.request_count < settings.INITIAL_NO_AUTH_ACTION_COUNT:
        ActionAuthenticatorMixin.request_count += 1
        return
    if self.headers.get("X-Amz-Target") in ActionAuthenticatorMixin.PUBLIC_OPERATIONS:
        return
    api = self._get_action()
    resolver = CHECKS.get(self.service_name)
    checks = resolver(self, api) if resolver else [(f"{self.service_name}:{api}", resource, {})]
    path = self.raw_path + (f"?{self.parsed_url.query}" if self.parsed_url.query else "")
    for check in checks:
        action, arn, _ = check
        # A GET has no payload: moto's .data then holds parameters parsed from the URL (Lambda's
        # REST calls), which would be signed as a body and never match. A form POST (SNS) has
        # its payload in .data, its raw body consumed by the form parser.
        data = {} if self.method in ("GET", "HEAD", "DELETE") else self.data
        request = IAMRequest(account_id=self.current_account, method=self.method, path=path,
                             data=data, body=self.raw_body, headers=self.headers,
                             action=action.split(":", 1)[1])
        # moto prefixes the action with the signing name, which is not always IAM's service
        # prefix (CloudWatch signs as "monitoring", IAM says "cloudwatch:PutMetricData").
        request._action = action
        request.check_signature()
        try:
            request.check_action_permitted(arn)  # moto: actions, resources, role trust
        except AccessDeniedError:
            _log_denial(request._access_key.arn, action, arn, "not allowed by its policies")
            raise
        why = _denial(self, check)
        if why is not None:
            _log_denial(request._access_key.arn, action, arn, why)
            raise AccessDeniedError(user_arn=request._access_key.arn,
                                    action=f"{action} on {arn}: {why}")


def _log_denial(principal: str, action: str, resource: str, why: str) -> None:
    # One line per denial on stderr (the kit's server log), read by IamCloud.denials().
    print(f"{DENIED} {principal} {action} {resource} ({why})", file=sys.stderr, flush=True)


_moto_s3_authorization = ActionAuthenticatorMixin._authenticate_and_authorize_s3_action


def _keys_to_delete(body: Any) -> list[str]:
    objects = xmltodict.parse(body)["Delete"].get("Object", [])
    return [o["Key"] for o in (objects if isinstance(objects, list) else [objects])]


def _authorize_s3(self: Any, bucket_name: str | None = None,
                  key_name: str | None = None) -> None:
    """moto's own S3 check (it builds bucket and object ARNs itself), then the conditions of
    the allowing statement (s3:prefix); denials logged."""
    if key_name is None and self.method == "POST" and "delete" in self.querystring:
        # DeleteObjects: AWS authorizes s3:DeleteObject on each object the request names
        # (Spark's committer deletes its temporaries so); moto checks the bucket's ARN, which
        # no grant on a key prefix matches.
        for key in _keys_to_delete(self.body):
            _authorize_s3(self, bucket_name=bucket_name, key_name=key)
        return
    target = f"{bucket_name or '*'}/{key_name}" if key_name else (bucket_name or "*")
    action, arn = f"s3:{self._get_action()}", f"arn:aws:s3:::{target}"
    enforced = ActionAuthenticatorMixin.request_count >= settings.INITIAL_NO_AUTH_ACTION_COUNT
    try:
        _moto_s3_authorization(self, bucket_name=bucket_name, key_name=key_name)
    except Exception as exc:
        # Everything this check raises is a refusal. moto's S3 errors carry their code as a
        # string ("AccessDenied", "SignatureDoesNotMatch"), never the status 403.
        code = getattr(exc, "code", type(exc).__name__)
        _log_denial(self.get_access_key(), action, arn,
                    "not allowed by its policies" if code == "AccessDenied" else code)
        raise
    if not enforced:
        return
    why = _denial(self, (action, arn, s3_context(self)))
    if why is not None:
        _log_denial(self.get_access_key(), action, arn, why)
        raise S3AccessDeniedError()


class _SignedHeadersS3Auth(S3SigV4Auth):
    """S3's SigV4 computed over exactly the headers the request's SignedHeaders names, as S3
    does. moto recomputes a signature with botocore's signer, which never signs User-Agent
    (botocore.auth.SIGNED_HEADERS_BLACKLIST); the AWS SDK for Java v1 under S3A (DistCp, local
    Spark) signs it, so moto alone refuses every S3A request as SignatureDoesNotMatch."""

    def headers_to_sign(self, request: Any) -> HTTPHeaders:
        # moto builds `request` from the signed headers only (IAMRequestBase._create_aws_request)
        signed = HTTPHeaders()
        for name, value in request.headers.items():
            signed[name.lower()] = value
        return signed


def install() -> None:
    S3IAMRequest._create_auth = lambda self, credentials: _SignedHeadersS3Auth(  # type: ignore[method-assign]
        credentials, self._service, self._region)
    ActionAuthenticatorMixin._authenticate_and_authorize_normal_action = _authorize  # type: ignore[method-assign]
    ActionAuthenticatorMixin._authenticate_and_authorize_s3_action = _authorize_s3  # type: ignore[method-assign]


def main() -> int:
    from moto.server import ThreadedMotoServer

    from tests.kit import moto_fixes

    install()
    moto_fixes.apply()  # moto can lose DynamoDB writes and SQS messages under concurrency
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    print(f"ENDPOINT http://{host}:{port}", flush=True)
    sys.stdin.read()  # until the parent closes the pipe (or dies)
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
