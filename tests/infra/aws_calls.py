"""Every AWS operation each deployable's code can call, read from the code, as IAM actions on
named resources: what tests/infra/test_grants_cover_calls.py checks the shipped policies against.

The scan walks the syntax tree of each component's files (its package, plus every module of ours
it imports, by `import` or by a module name in a string such as the agent's dispatch table) and
finds method calls whose name is an operation of a service the component makes a client of
(`boto3.client("sqs")`, `client("sqs")`): botocore's own service models give the names, so a
renamed or new call is found without editing a list here. `get_paginator("query")` counts as the
operation it pages. A name that is an operation of two services the component uses must be
resolved in AMBIGUOUS (never guessed); none is today.

What the scan cannot see is declared by hand below, each with why: calls the JVM makes (S3A in
the copy worker's distcp, Spark's S3 reads and writes in the Glue jobs), and which resource each
module's calls reach (TARGETS: the code passes table names and queue URLs in from configuration,
so the resource is known per module, not per call).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import botocore
import botocore.session

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("onprem_agent", "lambdas", "glue_jobs", "hdfs_events", "hdfs_events_cli")
# Every service a component of ours may make a client of; a client of another fails the scan.
SERVICES = ("athena", "cloudwatch", "dynamodb", "glue", "iam", "lambda", "logs", "s3", "sns", "sqs",
            "sts")

# The files each deployable runs, before following imports.
COMPONENTS: dict[str, tuple[str, ...]] = {
    "onprem": ("onprem_agent/**/*.py",),
    "consumer": ("lambdas/ingest/**/*.py",),
    "glue": ("glue_jobs/**/*.py",),
    "cli": ("hdfs_events_cli/**/*.py",),
}


@dataclass(frozen=True, slots=True)
class Target:
    """The resource a call reaches. kind: a table, queue or topic by the logical id the stacks
    give it ("StateTable"); "lake" (the lake bucket, `prefixes` the key prefixes the call may
    touch); "replica" (a cdk.json sync destination); "metrics" (CloudWatch's namespace, which
    IAM scopes by condition only); "none" (an operation IAM does not authorise)."""

    kind: str
    prefixes: tuple[str, ...] = ()


STATE, INDEX, TRANSFERS, SYNC = (Target(t) for t in (
    "StateTable", "IndexTable", "TransfersTable", "SyncTable"))
EVENT_QUEUE, COPY_QUEUE, ALERT_TOPIC = Target("EventsQueue"), Target("CopyQueue"), Target(
    "AlertTopic")
APPLY_QUEUE = Target("ApplyQueue")
DRIFT_QUEUE = Target("DriftAlertsQueue")
# The lake's export prefixes (settings.export_prefixes) and a cluster's sync destinations
# (settings.sync_destinations_of): read from cdk.json by the test.
EXPORTS, REPLICA = Target("exports"), Target("replica")
# The cluster's own audit prefix in the lake (lake_layout.audit_cluster_prefix): per cluster, so the
# test names the prefix.
AUDIT = Target("audit")
# The cluster's own fsimage prefix in the lake (lake_layout.fsimage_cluster_prefix), `fetch-image`'s.
FSIMAGE = Target("fsimage")
INVENTORY_JOB = Target("-namespace-inventory")  # the Glue job, by the name the stack gives it
METRICS, NO_RESOURCE, ANY = Target("metrics"), Target("none"), Target("any")
RAW, QUARANTINE = Target("lake", ("raw/",)), Target("lake", ("quarantine/",))
QUARANTINE_INGEST = Target("lake", ("quarantine/ingest/",))  # the consumer's records
CONSUMER_FUNCTION = Target("ConsumerFunction")
CATALOG = Target("GlueTables")
# `hdfs-events who`: the stack's Athena workgroup, and what Athena reads and writes as the caller
# (stacks/cli_policies.py names them, the Analytics stack owning them): the Glue catalog, the
# lake's database, the two tables the query joins (by their ARN's ".../<table>" tail), their
# curated/ prefixes and the workgroup's results prefix.
WORKGROUP = Target(":workgroup/")
QUERIED_TABLES = ("events", "attribution")


@dataclass(frozen=True, slots=True)
class Call:
    component: str
    module: str  # repository-relative path
    function: str  # the enclosing function, "" at module level
    line: int
    service: str
    operation: str  # as AWS names it: "GetItem"

    @property
    def where(self) -> str:
        return f"{self.module}:{self.line}"


@dataclass(frozen=True, slots=True)
class Need:
    """One IAM action on one resource, and why (the call, or the declaration)."""

    action: str
    target: Target
    why: str


# The resource each module's calls of a service reach: (module, service) -> target.
TARGETS: dict[tuple[str, str], Target] = {
    # on-prem agent and copy worker
    ("onprem_agent/checkpoint.py", "dynamodb"): STATE,
    ("onprem_agent/lease.py", "dynamodb"): STATE,
    ("onprem_agent/commands/doctor.py", "dynamodb"): STATE,  # the checkpoint/lease table
    ("onprem_agent/commands/doctor.py", "sqs"): EVENT_QUEUE,
    ("onprem_agent/commands/doctor.py", "sts"): NO_RESOURCE,
    ("onprem_agent/sender.py", "sqs"): EVENT_QUEUE,
    ("onprem_agent/verify.py", "dynamodb"): INDEX,
    ("onprem_agent/sync/state.py", "dynamodb"): SYNC,
    ("onprem_agent/sync/replica.py", "s3"): REPLICA,
    # the multipart parts of the sync (and of fetch-image, whose FSIMAGE grant has UploadPart too)
    ("onprem_agent/sync/parts.py", "s3"): REPLICA,
    ("onprem_agent/opsmetrics.py", "cloudwatch"): METRICS,
    ("onprem_agent/audit/shipper.py", "s3"): AUDIT,
    ("onprem_agent/image_fetch.py", "s3"): FSIMAGE,
    # first start from the image: the markers listed, the inventory job's runs
    ("onprem_agent/live/image_start.py", "s3"): FSIMAGE,
    ("onprem_agent/live/image_start.py", "glue"): INVENTORY_JOB,
    ("onprem_agent/opsmetrics.py", "sns"): ALERT_TOPIC,
    ("onprem_agent/drift_alerts.py", "sqs"): DRIFT_QUEUE,
    ("onprem_agent/copy_worker/worker.py", "sqs"): COPY_QUEUE,
    ("onprem_agent/copy_worker/heartbeat.py", "sqs"): COPY_QUEUE,
    ("onprem_agent/copy_worker/transfers.py", "dynamodb"): TRANSFERS,
    # the worker lists a request's source before copying it: sources are export prefixes
    ("onprem_agent/copy_worker/listing.py", "s3"): EXPORTS,
    ("onprem_agent/copy_worker/outcome.py", "cloudwatch"): METRICS,
    # the alert topic; a request's own notify topics are the customer's, granted by their
    # topic policy (docs/deploy.md)
    ("onprem_agent/copy_worker/outcome.py", "sns"): ALERT_TOPIC,
    # consumer Lambda
    ("lambdas/ingest/index_table.py", "dynamodb"): INDEX,
    ("lambdas/ingest/sequence_store.py", "dynamodb"): INDEX,
    ("lambdas/ingest/apply_queue.py", "sqs"): APPLY_QUEUE,
    ("lambdas/ingest/iam_users.py", "iam"): Target("AgentUsers"),
    # Glue jobs
    ("glue_jobs/catalog.py", "glue"): CATALOG,
    # the attribution job's stream per run and its lines (the Analytics stack's log group)
    ("glue_jobs/attribution_log.py", "logs"): Target("AttributionLogs"),
    # the namespace inventory reads the agent's fsimage objects by byte ranges (HEAD, GET)
    ("glue_jobs/inventory_image.py", "s3"): Target("lake", ("fsimage/",)),
    # the index from an image (glue_jobs/image_index.py): the sequencer's position read, put or
    # moved; a repair's Scan of the entries; the BatchWriteItem calls, prepared once a write
    # task on the table image_index names
    ("glue_jobs/index_position.py", "dynamodb"): INDEX,
    ("glue_jobs/indexed_entries.py", "dynamodb"): INDEX,
    ("glue_jobs/wire_batch_write.py", "dynamodb"): INDEX,
    ("glue_jobs/namespace_inventory.py", "s3"): Target(
        "lake", ("fsimage/cluster=*/txid=*/_indexed.json",)),
    # cloud CLI
    ("hdfs_events_cli/commands/copy.py", "dynamodb"): TRANSFERS,
    ("hdfs_events_cli/commands/copy.py", "sqs"): COPY_QUEUE,
    ("hdfs_events_cli/commands/copy.py", "s3"): EXPORTS,  # lists the source: an export prefix
    ("hdfs_events_cli/index_reader.py", "dynamodb"): INDEX,
    ("hdfs_events_cli/commands/drift.py", "sqs"): DRIFT_QUEUE,
    ("hdfs_events_cli/index_status.py", "dynamodb"): INDEX,
    # quarantine redrive: lists and reads the consumer's records, invokes the consumer
    ("hdfs_events_cli/commands/quarantine.py", "s3"): QUARANTINE_INGEST,
    ("hdfs_events_cli/commands/quarantine.py", "lambda"): CONSUMER_FUNCTION,
    ("hdfs_events_cli/commands/who.py", "athena"): WORKGROUP,
}
# Where one module's calls of one service reach two resources: (module, function, service).
TARGETS_BY_FUNCTION: dict[tuple[str, str, str], Target] = {
    # raw events read back by key, quarantined records written
    ("lambdas/ingest/lake_store.py", "put", "s3"): Target("lake", ("raw/", "quarantine/")),
    ("lambdas/ingest/lake_store.py", "_body", "s3"): RAW,
    # a redrive reads a quarantine record and deletes it once moved to quarantine/redriven/
    ("lambdas/ingest/lake_store.py", "read", "s3"): QUARANTINE_INGEST,
    ("lambdas/ingest/lake_store.py", "delete", "s3"): QUARANTINE_INGEST,
    # The jobs' driver-side I/O (glue_jobs/storage.py S3Store, rooted at the lake): the
    # compactions list raw/ (events) and raw-audit/ (audit) and read a refused raw object back
    # to quarantine it; watermarks, the
    # compaction state and superseded runs live under curated/; refused input is copied
    # under quarantine/glue/.
    ("glue_jobs/storage.py", "list_objects", "s3"): Target("lake", ("raw/", "raw-audit/",
                                                                    "curated/")),
    ("glue_jobs/storage.py", "read_bytes", "s3"): Target("lake", ("raw/", "raw-audit/",
                                                                  "curated/")),
    ("glue_jobs/storage.py", "write_bytes", "s3"): Target("lake", ("curated/",
                                                                   "quarantine/glue/")),
    ("glue_jobs/storage.py", "delete_prefix", "s3"): Target("lake", ("curated/",)),
}

# A call whose name is both an operation and a method of ours: is it the boto3 call (True) or
# our method (False)? (module, name) -> bool; an unlisted one fails the scan.
SAME_NAME: dict[tuple[str, str], bool] = {
    ("onprem_agent/copy_worker/outcome.py", "publish"): True,  # self._sns.publish
    ("onprem_agent/opsmetrics.py", "publish"): True,  # SNS client's publish
    # OutcomePublisher.publish (outcome.py), whose SNS call is counted there
    ("onprem_agent/copy_worker/worker.py", "publish"): False,
    # LakeStore.list_objects (storage.py), whose ListObjectsV2 is counted there
    ("glue_jobs/audit_compaction.py", "list_objects"): False,
    ("glue_jobs/compaction_run.py", "list_objects"): False,
    ("glue_jobs/curated_io.py", "list_objects"): False,
    ("glue_jobs/rollup_days.py", "list_objects"): False,
    ("glue_jobs/storage.py", "list_objects"): False,
    ("glue_jobs/watermark.py", "list_objects"): False,
}

# A call name that is an operation of two services a component uses: (module, name) -> service.
AMBIGUOUS: dict[tuple[str, str], str] = {}

# Calls made by the JVM, which no Python scan sees, by component.
JVM_CALLS: dict[str, tuple[Need, ...]] = {
    # distcp reads the request's source through S3A (s3a://<lake>/<export prefix>...): it lists
    # the prefix (ListObjectsV2), reads each object (HeadObject, GetObject). It writes to HDFS
    # only. `fs.s3a.endpoint.region` is set, so S3A does not call GetBucketLocation.
    "onprem": (
        Need("s3:ListBucket", EXPORTS, "distcp's S3A lists the source prefix"),
        Need("s3:GetObject", EXPORTS, "distcp's S3A reads the source objects"),
    ),
    # Spark's S3 client in the jobs: compaction reads raw/ and writes curated/events (and
    # quarantine/glue/), the audit compaction reads raw-audit/ and writes curated/audit,
    # rollups read curated/events and rewrite their tables' days under
    # curated/. Each lists what it reads, reads, writes in parts and deletes a superseded run.
    "glue": tuple(
        Need(action, Target("lake", (prefix,)), f"Spark's S3 client on {prefix}")
        for prefix, actions in (
            ("raw/", ("s3:ListBucket", "s3:GetObject")),
            ("raw-audit/", ("s3:ListBucket", "s3:GetObject")),
            ("curated/", ("s3:ListBucket", "s3:GetObject", "s3:PutObject", "s3:DeleteObject",
                          "s3:AbortMultipartUpload")),
            ("quarantine/glue/", ("s3:ListBucket", "s3:GetObject", "s3:PutObject",
                                  "s3:DeleteObject", "s3:AbortMultipartUpload")),
        )
        for action in actions),
}

# What the platform does with the principal's own credentials for the component, which no
# code of ours calls, by component.
RUNTIME_NEEDS: dict[str, tuple[Need, ...]] = {
    "consumer": (
        *(Need(a, Target("ConsumerLogs"), "Lambda writes the function's logs")
          for a in ("logs:CreateLogStream", "logs:PutLogEvents")),
        # X-Ray's write actions support no resource-level permissions
        *(Need(a, ANY, "active tracing") for a in ("xray:PutTraceSegments",
                                                    "xray:PutTelemetryRecords")),
        # the event source mappings poll their queues as the function's role (CDK's grant)
        *(Need(f"sqs:{a}", queue, "Lambda's event source mapping")
          for queue in (EVENT_QUEUE, APPLY_QUEUE) for a in (
            "ReceiveMessage", "ChangeMessageVisibility", "GetQueueUrl", "DeleteMessage",
            "GetQueueAttributes")),
    ),
    "glue": (
        # Glue reads the job script and the library zip CDK uploaded (CDK's asset grant)
        *(Need(a, Target("Assets"), "Glue loads the job's script and --extra-py-files")
          for a in ("s3:GetObject", "s3:GetBucketLocation", "s3:ListBucket")),
        # the security configuration: continuous logs encrypted with the job key, bookmarks
        # encrypted client-side with it
        Need("logs:AssociateKmsKey", Target("GlueLogs"), "encrypted continuous logging"),
        *(Need(a, Target("GlueKey"), "job bookmarks and logs encrypted with the job key")
          for a in ("kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey")),
    ),
}


def implied(need: Need, *, lake_kms: bool) -> list[Need]:
    """KMS actions a call needs besides its own: an object of the KMS-encrypted lake is read
    with kms:Decrypt and written with kms:GenerateDataKey (S3 calls KMS as the caller); a
    publish to the encrypted alert topic needs both on its key (SNS calls KMS as the
    publisher); an Athena query reads the catalog and the lake, and writes its result, as its
    caller."""
    lake_key = Target("LakeKey")
    if need.target == WORKGROUP and need.action == "athena:StartQueryExecution":
        # Athena plans and runs the query with the caller's credentials (its "Access to
        # Amazon S3" and "Fine-grained access to databases and tables" pages).
        why = "Athena runs the query as the caller"
        athena = [*(Need(a, Target(k), why)
                    for a in ("glue:GetDatabase", "glue:GetTable", "glue:GetPartitions")
                    for k in (":catalog", ":database/",
                              *(f"/{t}" for t in QUERIED_TABLES))),
                  *(Need(a, Target("lake", (f"curated/{t}/",)), why)
                    for a in ("s3:ListBucket", "s3:GetObject") for t in QUERIED_TABLES),
                  Need("s3:PutObject", Target("lake", ("athena-results/",)), why)]
        return athena + [i for n in athena for i in implied(n, lake_kms=lake_kms)]
    if need.target == WORKGROUP and need.action == "athena:GetQueryResults":
        results = Need("s3:GetObject", Target("lake", ("athena-results/",)),
                       "GetQueryResults reads the result object as the caller")
        return [results, *implied(results, lake_kms=lake_kms)]
    if need.target.kind in ("lake", "exports", "audit", "fsimage") and lake_kms:
        if need.action == "s3:GetObject":
            return [Need("kms:Decrypt", lake_key, f"{need.why}, SSE-KMS")]
        if need.action == "s3:PutObject":
            return [Need("kms:GenerateDataKey", lake_key, f"{need.why}, SSE-KMS")]
    if need.target == ALERT_TOPIC and need.action == "sns:Publish":
        return [Need(a, Target("AlertKey"), f"{need.why}, encrypted topic")
                for a in ("kms:GenerateDataKey", "kms:Decrypt")]
    return []


# Operations whose IAM action is not "<service>:<Operation>" (AWS Service Authorization
# Reference, "Actions defined by ..." of each service; S3's "Mapping API operations to IAM
# actions"). An empty tuple: the operation needs no permission.
ACTION_OF: dict[tuple[str, str], tuple[str, ...]] = {
    ("s3", "ListObjectsV2"): ("s3:ListBucket",),
    ("s3", "ListObjects"): ("s3:ListBucket",),
    ("s3", "HeadObject"): ("s3:GetObject",),
    ("s3", "HeadBucket"): ("s3:ListBucket",),
    ("s3", "CreateMultipartUpload"): ("s3:PutObject",),
    ("s3", "UploadPart"): ("s3:PutObject",),
    ("s3", "CompleteMultipartUpload"): ("s3:PutObject",),
    # the source's read side and the target's write side (same object space here)
    ("s3", "CopyObject"): ("s3:GetObject", "s3:PutObject"),
    ("s3", "UploadPartCopy"): ("s3:GetObject", "s3:PutObject"),
    ("s3", "DeleteObjects"): ("s3:DeleteObject",),
    ("s3", "ListMultipartUploads"): ("s3:ListBucketMultipartUploads",),
    ("s3", "ListParts"): ("s3:ListMultipartUploadParts",),
    # "You cannot set permissions explicitly for SendMessageBatch, DeleteMessageBatch, or
    # ChangeMessageVisibilityBatch" (SQS Developer Guide, "Amazon SQS batch actions")
    ("sqs", "SendMessageBatch"): ("sqs:SendMessage",),
    ("sqs", "DeleteMessageBatch"): ("sqs:DeleteMessage",),
    ("sqs", "ChangeMessageVisibilityBatch"): ("sqs:ChangeMessageVisibility",),
    ("sts", "GetCallerIdentity"): (),
    ("lambda", "Invoke"): ("lambda:InvokeFunction",),
}
# Bucket-level S3 actions: granted on the bucket ARN (with an s3:prefix condition where IAM
# has one), not on object ARNs.
BUCKET_ACTIONS = frozenset({"s3:ListBucket", "s3:ListBucketMultipartUploads"})


def actions_of(service: str, operation: str) -> tuple[str, ...]:
    """The IAM actions a call needs (AWS documents the prefix: s3, sqs, dynamodb, ... are the
    service names; CloudWatch's botocore name is its IAM prefix too)."""
    return ACTION_OF.get((service, operation), (f"{service}:{operation}",))


@cache
def _operations() -> dict[str, dict[str, str]]:
    """snake_case call name -> {service: OperationName} over SERVICES."""
    session = botocore.session.get_session()
    found: dict[str, dict[str, str]] = {}
    for service in SERVICES:
        for op in session.get_service_model(service).operation_names:
            found.setdefault(botocore.xform_name(op), {})[service] = op
    return found


def _module_path(name: str) -> Path | None:
    base = REPO.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(tree: ast.AST) -> Iterator[str]:
    """Dotted names of our modules this file imports, or names in a string (a dispatch table)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def files_of(component: str) -> list[Path]:
    """The component's own files and every module of ours they import, transitively."""
    todo = [p for pattern in COMPONENTS[component] for p in REPO.glob(pattern)]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _imports(ast.parse(path.read_text(), str(path))):
            if name.split(".")[0] in PACKAGES and (found := _module_path(name)) is not None:
                todo.append(found)
    return sorted(seen)


def _client_services(trees: Iterable[ast.AST]) -> set[str]:
    """Services of `boto3.client("x")` / `client("x")` calls (our own client() helpers too)."""
    services = set()
    for tree in trees:
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                    and ((isinstance(node.func, ast.Name) and node.func.id == "client")
                         or (isinstance(node.func, ast.Attribute) and node.func.attr == "client"))):
                service = node.args[0].value
                if service not in SERVICES:
                    raise AssertionError(f"a client of {service!r}: add it to SERVICES")
                services.add(service)
    return services


def _functions(tree: ast.AST) -> dict[int, str]:
    """id(call node) -> name of the innermost function holding it."""
    owner: dict[int, str] = {}

    def visit(node: ast.AST, name: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef,
                                                     ast.AsyncFunctionDef)) else name
            owner[id(child)] = inner
            visit(child, inner)

    visit(tree, "")
    return owner


@cache
def calls_of(component: str) -> tuple[Call, ...]:
    paths = files_of(component)
    trees = {p: ast.parse(p.read_text(), str(p)) for p in paths}
    services = _client_services(trees.values())
    ours = {n.name for t in trees.values() for n in ast.walk(t)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    operations = _operations()
    found = []
    for path, tree in trees.items():
        module = path.relative_to(REPO).as_posix()
        owner = _functions(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            name = node.func.attr
            if (name == "get_paginator" and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                name = node.args[0].value
            candidates = {s: op for s, op in operations.get(name, {}).items() if s in services}
            if not candidates:
                continue
            if name in ours and node.func.attr == name:
                if (module, name) not in SAME_NAME:
                    raise AssertionError(f"{module}:{node.lineno}: {name} is an operation and a "
                                         "method of ours: classify it in SAME_NAME")
                if not SAME_NAME[(module, name)]:
                    continue
            if len(candidates) > 1:
                if (module, name) not in AMBIGUOUS:
                    raise AssertionError(f"{module}:{node.lineno}: {name} is an operation of "
                                         f"{sorted(candidates)}: resolve it in AMBIGUOUS")
                service = AMBIGUOUS[(module, name)]
            else:
                (service,) = candidates
            found.append(Call(component, module, owner.get(id(node), ""), node.lineno,
                              service, candidates[service]))
    return tuple(sorted(found, key=lambda c: (c.module, c.line)))


def target_of(call: Call) -> Target:
    key = (call.module, call.function, call.service)
    if key in TARGETS_BY_FUNCTION:
        return TARGETS_BY_FUNCTION[key]
    if (call.module, call.service) in TARGETS:
        return TARGETS[(call.module, call.service)]
    raise AssertionError(f"{call.where}: {call.service}:{call.operation} in {call.function}(): "
                         "say which resource it reaches in TARGETS")


# The cloud CLI's two uses, each with its own policy (stacks/cli_policies.py): `copy submit`
# (these functions) and read-only operator commands (`copy status`, `index ...`: the rest).
CLI_SUBMIT = frozenset({("hdfs_events_cli/commands/copy.py", f)
                        for f in ("_submit", "_record_requested", "_source_listing")})


# `quarantine redrive`, with a policy of its own.
CLI_REDRIVE = "hdfs_events_cli/commands/quarantine.py"
# `who`, with a policy of its own (lake-query).
CLI_LAKE_QUERY = "hdfs_events_cli/commands/who.py"


def cli_use(call: Call) -> str:
    if call.module == CLI_REDRIVE:
        return "redrive"
    if call.module == CLI_LAKE_QUERY:
        return "lake-query"
    return "submit" if (call.module, call.function) in CLI_SUBMIT else "read"


def code_needs(calls: Iterable[Call]) -> list[Need]:
    return [Need(action, target_of(c), f"{c.where} {c.operation}")
            for c in calls for action in actions_of(c.service, c.operation)]


def needs_of(component: str, *, lake_kms: bool) -> list[Need]:
    """Every IAM action the component needs, on its resource: the scanned calls, the JVM's
    declared ones, what the platform does as it, and the KMS calls these imply."""
    needs = [n for n in code_needs(calls_of(component)) if n.target != NO_RESOURCE]
    needs += [*JVM_CALLS.get(component, ()), *RUNTIME_NEEDS.get(component, ())]
    return needs + [i for n in needs for i in implied(n, lake_kms=lake_kms)]
