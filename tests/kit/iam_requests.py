"""What one request asks IAM for, as AWS authorizes it: the IAM action, the resource ARN and the
service's condition keys, per service (moto 5.2 checks `<signing name>:<API name>` on "*" for
most services, and supplies no condition key). Runs inside the kit's moto server
(tests/kit/iam_server.py), reading moto's request objects and backends.

Resolved here: DynamoDB (the table, or the index of a Query/Scan by IndexName; every table of a
Batch*/Transact* call; `dynamodb:LeadingKeys` from the Key, Item or the key condition's
partition-key value), SNS (TopicArn), SQS (the batch calls' IAM actions; GetQueueUrl's queue),
IAM (the user of a UserName call, the role of a RoleName call), CloudWatch (the `cloudwatch`
prefix, `cloudwatch:namespace`), Glue (the catalog, the database, the table of a call).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models import dynamodb_backends
from moto.iam.models import iam_backends

# (IAM action, resource ARN, the service's condition keys and their values)
Check = tuple[str, str, dict[str, str | list[str]]]

# The IAM action of an API call where it is not `<service>:<API name>`.
SQS_BATCH_ACTIONS = {"SendMessageBatch": "SendMessage", "DeleteMessageBatch": "DeleteMessage",
                     "ChangeMessageVisibilityBatch": "ChangeMessageVisibility"}
TRANSACT_WRITE_ACTIONS = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
                          "ConditionCheck": "ConditionCheckItem"}
_EQUALITY = re.compile(r"(#?[A-Za-z0-9_.]+)\s*=\s*(:[A-Za-z0-9_]+)")


def _table_arn(response: Any, table: str) -> str:
    return f"arn:aws:dynamodb:{response.region}:{response.current_account}:table/{table}"


def _scalar(value: dict[str, Any]) -> str:
    return str(next(iter(value.values())))  # {"S": "demo"}, {"N": "1"}


def _partition_key(response: Any, table: str) -> str | None:
    try:
        return dynamodb_backends[response.current_account][response.region] \
            .get_table(table).hash_key_attr
    except Exception:  # no such table: moto answers ResourceNotFound after authorization
        return None


def _query_partition(body: dict[str, Any], key: str) -> list[str]:
    if "KeyConditions" in body:
        return [_scalar(v) for v in body["KeyConditions"][key]["AttributeValueList"]]
    names, values = body.get("ExpressionAttributeNames", {}), body["ExpressionAttributeValues"]
    found = [_scalar(values[v]) for n, v in _EQUALITY.findall(body["KeyConditionExpression"])
             if names.get(n, n) == key]
    if not found:
        raise LookupError(f"no {key} = :value in {body['KeyConditionExpression']!r}")
    return found


def _leading_keys(response: Any, table: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """dynamodb:LeadingKeys: the partition-key values of `items` (Key or Item maps)."""
    key = _partition_key(response, table)
    if key is None:
        return {}
    return {"dynamodb:LeadingKeys": sorted({_scalar(i[key]) for i in items if key in i})}


def dynamodb_checks(response: Any, action: str) -> list[Check]:
    body = json.loads(response.raw_body or b"{}")  # moto's DynamoDB replaces .body by a dict
    if action == "TransactGetItems":
        return [("dynamodb:GetItem", _table_arn(response, i["Get"]["TableName"]),
                 _leading_keys(response, i["Get"]["TableName"], [i["Get"]["Key"]]))
                for i in body["TransactItems"]]
    if action == "TransactWriteItems":
        return [(f"dynamodb:{TRANSACT_WRITE_ACTIONS[kind]}", _table_arn(response, op["TableName"]),
                 _leading_keys(response, op["TableName"], [op.get("Key") or op["Item"]]))
                for i in body["TransactItems"] for kind, op in i.items()]
    if action == "BatchGetItem":
        return [(f"dynamodb:{action}", _table_arn(response, t),
                 _leading_keys(response, t, r["Keys"])) for t, r in body["RequestItems"].items()]
    if action == "BatchWriteItem":
        return [(f"dynamodb:{action}", _table_arn(response, t), _leading_keys(
            response, t, [w.get("PutRequest", {}).get("Item") or w["DeleteRequest"]["Key"]
                          for w in writes])) for t, writes in body["RequestItems"].items()]
    if "TableName" not in body:  # ListTables and the like: IAM's resource is "*"
        return [(f"dynamodb:{action}", "*", {})]
    table = body["TableName"]
    arn = _table_arn(response, table)
    if body.get("IndexName"):  # AWS authorizes a Query or Scan of an index on the index's ARN
        arn = f"{arn}/index/{body['IndexName']}"
    context: dict[str, Any] = {}
    if "Key" in body or "Item" in body:
        context = _leading_keys(response, table, [body.get("Key") or body["Item"]])
    elif action == "Query" and not body.get("IndexName"):
        key = _partition_key(response, table)
        context = {"dynamodb:LeadingKeys": _query_partition(body, key)} if key else {}
    return [(f"dynamodb:{action}", arn, context)]


# Glue calls naming their database as "Name" (the others name it "DatabaseName").
_GLUE_DATABASE_CALLS = {"CreateDatabase", "GetDatabase", "UpdateDatabase", "DeleteDatabase"}


def glue_checks(response: Any, action: str) -> list[Check]:
    """Glue authorizes a call on each Data Catalog resource it reaches: the catalog, the
    database, the table (AWS Glue developer guide, "Specifying AWS Glue resource ARNs": a table
    operation needs all three)."""
    body = json.loads(response.raw_body or b"{}")
    base = f"arn:aws:glue:{response.region}:{response.current_account}"
    arns = [f"{base}:catalog"]
    database = (body.get("Name") if action in _GLUE_DATABASE_CALLS else
                body.get("DatabaseName")) or body.get("DatabaseInput", {}).get("Name")
    if database:
        arns.append(f"{base}:database/{database}")
        table = (body.get("TableName") or body.get("TableInput", {}).get("Name")
                 or (body.get("Name") if action not in _GLUE_DATABASE_CALLS else None))
        if table:
            arns.append(f"{base}:table/{database}/{table}")
    return [(f"glue:{action}", arn, {}) for arn in arns]


def sns_checks(response: Any, action: str) -> list[Check]:
    topic = response._get_param("TopicArn") or response._get_param("TargetArn")
    return [(f"sns:{action}", topic or "*", {})]


def sqs_checks(response: Any, action: str) -> list[Check]:
    iam_action = f"sqs:{SQS_BATCH_ACTIONS.get(action, action)}"
    if action == "GetQueueUrl":
        name = response._get_param("QueueName")
        return [(iam_action,
                 f"arn:aws:sqs:{response.region}:{response.current_account}:{name}", {})]
    return [(iam_action, response._determine_resource(), {})]


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
    return [(f"iam:{action}", arn, {})]


def cloudwatch_checks(response: Any, action: str) -> list[Check]:
    # CloudWatch signs as "monitoring"; IAM's prefix is "cloudwatch". Metric calls take no
    # resource ("*"); PutMetricData is scoped by its namespace.
    namespace = response._get_param("Namespace")
    return [(f"cloudwatch:{action}", "*",
             {"cloudwatch:namespace": namespace} if namespace else {})]


def s3_context(response: Any) -> dict[str, str | list[str]]:
    """s3:prefix of a listing (ListObjects/ListObjectsV2 with a prefix; absent without one)."""
    prefix = response.querystring.get("prefix")
    return {"s3:prefix": prefix[0]} if prefix else {}


# Service -> the checks a request needs, each allowed. A service missing here keeps moto's own
# single check (action `<signing name>:<API name>` on the resource moto found, no condition key).
CHECKS: dict[str, Callable[[Any, str], list[Check]]] = {
    "cloudwatch": cloudwatch_checks,
    "dynamodb": dynamodb_checks,
    "glue": glue_checks,
    "iam": iam_checks,
    "sns": sns_checks,
    "sqs": sqs_checks,
}
