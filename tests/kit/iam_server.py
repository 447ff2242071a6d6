"""A moto server that enforces IAM the way AWS would for the calls our principals make, run in
a process of its own (`python -m tests.kit.iam_server`; tests/kit/iam_cloud.py starts it), so
the in-process moto of unit tests and the shared moto server stay as they are.

What moto 5.2 itself enforces once `/moto-api/reset-auth` switches authorization on: every
request must carry an access key of a moto IAM user or STS assumed role and a valid SigV4
signature; the action (`<service>:<API name>`, wildcards matched) must be allowed, and not
denied, by the caller's identity policies (user inline + managed + group; role inline +
managed). Its gaps, and what this module adds (patched at moto's one authorization point,
`_authenticate_and_authorize_normal_action`, in this process only):
- Resources: moto checks "*" for every service but SQS, STS, S3 and IAM's role calls, so a grant
  on a table ARN is denied. Added: `RESOURCES` names the resources of DynamoDB (table, and
  index of a Query/Scan by IndexName; every table of a Batch*/Transact* call), SNS (TopicArn),
  IAM user calls (UserName: the consumer's GetUser of the agents' users) and SQS GetQueueUrl
  (QueueName) requests. Glue (catalog/database/table ARNs) is a hook left open:
  add `RESOURCES["glue"]`.
- Action names: moto checks `<signing name>:<API name>`, AWS the IAM action. Added: the IAM
  service prefix (CloudWatch signs as `monitoring`, its actions are `cloudwatch:*`); SQS
  `*Batch` calls are `sqs:SendMessage`, `sqs:DeleteMessage`, `sqs:ChangeMessageVisibility`
  (moto alone denies SendMessageBatch to a sender granted SendMessage, which AWS allows);
  TransactGetItems is a `dynamodb:GetItem` per item, TransactWriteItems a
  Put/Update/Delete/ConditionCheckItem per item.
- Resource policies: moto evaluates none. Added: the Deny statements of an SQS queue's policy
  (set with SetQueueAttributes) on every call to that queue (tests/kit/iam_conditions.py;
  `aws:SecureTransport` is "true": the agents reach AWS over HTTPS, only this stand-in is HTTP).
Not enforced at all: Condition elements of identity policies (moto supplies no context values,
so `dynamodb:LeadingKeys`, `s3:prefix`, `cloudwatch:namespace`, `kms:ViaService` pass; the
template tests in tests/infra check them statically), bucket policies and Allow statements of
resource policies, S3 CopyObject's read of its source, KMS calls S3 and SNS make on the
caller's behalf, and role trust policies (the kit assumes service roles before switching
authorization on, standing in for the service).

Prints `ENDPOINT http://127.0.0.1:<port>` once listening, and exits when its stdin closes, so it
never outlives the test process that started it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import HTTPHeaders
from moto import settings
from moto.core.authorization import ActionAuthenticatorMixin
from moto.core.exceptions import AccessDeniedError
from moto.iam.access_control import IAMRequest, S3IAMRequest
from moto.iam.models import iam_backends
from moto.sqs.models import sqs_backends
from moto.sts.models import sts_backends

from tests.kit.iam_cloud import DENIED
from tests.kit.iam_conditions import deny_applies

Check = tuple[str, str]  # (IAM action, resource ARN)

# The IAM action of an API call where it is not `<service>:<API name>`.
SQS_BATCH_ACTIONS = {"SendMessageBatch": "SendMessage", "DeleteMessageBatch": "DeleteMessage",
                     "ChangeMessageVisibilityBatch": "ChangeMessageVisibility"}
TRANSACT_WRITE_ACTIONS = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
                          "ConditionCheck": "ConditionCheckItem"}


def _table_arn(response: Any, table: str) -> str:
    return f"arn:aws:dynamodb:{response.region}:{response.current_account}:table/{table}"


def dynamodb_checks(response: Any, action: str) -> list[Check]:
    body = json.loads(response.raw_body or b"{}")  # moto's DynamoDB replaces .body by a dict
    if action == "TransactGetItems":
        return [("dynamodb:GetItem", _table_arn(response, item["Get"]["TableName"]))
                for item in body["TransactItems"]]
    if action == "TransactWriteItems":
        return [(f"dynamodb:{TRANSACT_WRITE_ACTIONS[kind]}", _table_arn(response, op["TableName"]))
                for item in body["TransactItems"] for kind, op in item.items()]
    if action in ("BatchGetItem", "BatchWriteItem"):
        return [(f"dynamodb:{action}", _table_arn(response, table))
                for table in body["RequestItems"]]
    if "TableName" not in body:  # ListTables and the like: IAM's resource is "*"
        return [(f"dynamodb:{action}", "*")]
    arn = _table_arn(response, body["TableName"])
    if body.get("IndexName"):  # AWS authorizes a Query or Scan of an index on the index's ARN
        arn = f"{arn}/index/{body['IndexName']}"
    return [(f"dynamodb:{action}", arn)]


def sns_checks(response: Any, action: str) -> list[Check]:
    topic = response._get_param("TopicArn") or response._get_param("TargetArn")
    return [(f"sns:{action}", topic or "*")]


def sqs_checks(response: Any, action: str) -> list[Check]:
    iam_action = f"sqs:{SQS_BATCH_ACTIONS.get(action, action)}"
    if action == "GetQueueUrl":
        name = response._get_param("QueueName")
        return [(iam_action,
                 f"arn:aws:sqs:{response.region}:{response.current_account}:{name}")]
    return [(iam_action, response._determine_resource())]


def iam_checks(response: Any, action: str) -> list[Check]:
    backend = iam_backends[response.current_account]["aws"]
    user, role = response._get_param("UserName"), response._get_param("RoleName")
    if user:
        found = backend.users.get(user)
        arn = found.arn if found else f"arn:aws:iam::{response.current_account}:user/{user}"
    elif role:
        arn = response._determine_resource()  # moto's: the role's ARN
    else:
        arn = response._get_param("PolicyArn") or "*"
    return [(f"iam:{action}", arn)]


# Service -> the (action, resource) pairs a request needs, each allowed. A service missing here
# keeps moto's own single check (action `<service>:<API name>` on the resource moto found).
RESOURCES: dict[str, Callable[[Any, str], list[Check]]] = {
    "dynamodb": dynamodb_checks,
    "iam": iam_checks,
    "sns": sns_checks,
    "sqs": sqs_checks,
}


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


def _queue_policy_denial(response: Any, action: str, queue_arn: str) -> str | None:
    queue = next((q for q in sqs_backends[response.current_account][response.region]
                  .queues.values() if q.queue_arn == queue_arn), None)
    if queue is None or not queue.policy:
        return None
    caller = _Caller(response.current_account, response.get_access_key())
    context = {"aws:PrincipalArn": caller.principal_arn, "aws:userid": caller.userid,
               "aws:PrincipalAccount": response.current_account, "aws:SecureTransport": "true"}
    return deny_applies(json.loads(queue.policy)["Statement"], action=action,
                        resource=queue_arn, context=context)


def _authorize(self: Any, resource: str = "*") -> None:
    """Replaces ActionAuthenticatorMixin._authenticate_and_authorize_normal_action."""
    if ActionAuthenticatorMixin.request_count < settings.INITIAL_NO_AUTH_ACTION_COUNT:
        ActionAuthenticatorMixin.request_count += 1
        return
    if self.headers.get("X-Amz-Target") in ActionAuthenticatorMixin.PUBLIC_OPERATIONS:
        return
    api = self._get_action()
    resolver = RESOURCES.get(self.service_name)
    checks = resolver(self, api) if resolver else [(f"{self.service_name}:{api}", resource)]
    path = self.raw_path + (f"?{self.parsed_url.query}" if self.parsed_url.query else "")
    for action, arn in checks:
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
            request.check_action_permitted(arn)
        except AccessDeniedError:
            _log_denial(request._access_key.arn, action, arn, "not allowed by its policies")
            raise
        if self.service_name == "sqs" and arn != "*":
            sid = _queue_policy_denial(self, action, arn)
            if sid is not None:
                _log_denial(request._access_key.arn, action, arn, f"queue policy {sid}")
                raise AccessDeniedError(
                    user_arn=request._access_key.arn,
                    action=f"{action} on {arn}: explicit deny in the queue policy ({sid})")


def _log_denial(principal: str, action: str, resource: str, why: str) -> None:
    # One line per denial on stderr (the kit's server log), read by IamCloud.denials().
    print(f"{DENIED} {principal} {action} {resource} ({why})", file=sys.stderr, flush=True)


_moto_s3_authorization = ActionAuthenticatorMixin._authenticate_and_authorize_s3_action


def _authorize_s3(self: Any, bucket_name: str | None = None,
                  key_name: str | None = None) -> None:
    """moto's own S3 check (it builds bucket and object ARNs itself), its denials logged."""
    try:
        _moto_s3_authorization(self, bucket_name=bucket_name, key_name=key_name)
    except Exception as exc:
        # Everything this check raises is a refusal. moto's S3 errors carry their code as a
        # string ("AccessDenied", "SignatureDoesNotMatch"), never the status 403.
        code = getattr(exc, "code", type(exc).__name__)
        target = f"{bucket_name or '*'}/{key_name}" if key_name else (bucket_name or "*")
        _log_denial(self.get_access_key(), f"s3:{self._get_action()}",
                    f"arn:aws:s3:::{target}",
                    "not allowed by its policies" if code == "AccessDenied" else code)
        raise


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

    install()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    print(f"ENDPOINT http://{host}:{port}", flush=True)
    sys.stdin.read()  # until the parent closes the pipe (or dies)
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
