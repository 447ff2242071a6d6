"""The consumer Lambda as it is deployed: the function's asset from the synthesized cloud
assembly, run by a clean Python 3.11 that holds only that asset, the Powertools layer's packages
at the version the stack resolves and the runtime's boto3 (`make` builds them in
.make/lambda-runtime), on a real SQS FIFO batch received from moto server, then on the continue
request that batch left on the apply queue.

The local environment is deployed into moto's CloudFormation, so the function's environment
variables are the template's, resolved; the handler runs in a subprocess (`run_as_lambda.py`,
`python -I -S`: not the repository, not the dev venv) with Lambda's own variables and X-Ray
daemon address pointed at a UDP socket of this test.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from hdfs_events import lake_layout, names
from hdfs_events_cli.index_status import read_status
from stacks.ingest_function import POWERTOOLS_DISTRIBUTION, pinned_version
from tests.infra.synth import REPO, synthesized
from tests.kit.ingest_aws import lake_lines
from tests.kit.ingest_builders import pack, sample_events, with_manifests
from tests.kit.local_cloud import Assembly, deploy_to_moto
from tests.kit.sqs_lambda import SYSTEM_ATTRIBUTES, lambda_record

pytestmark = pytest.mark.slow

LAMBDA_RUNTIME = REPO / ".make" / "lambda-runtime"
LAYER = LAMBDA_RUNTIME / "layer" / "python"
RUNTIME_SDK = LAMBDA_RUNTIME / "runtime"
RUN_AS_LAMBDA = Path(__file__).with_name("run_as_lambda.py")
RUNTIME_SDK_PINS = Path(__file__).with_name("lambda_runtime_sdk.txt")
# The first Powertools with Metrics.add_dimensions, which the handler calls on every batch.
FIRST_POWERTOOLS_WITH_ADD_DIMENSIONS = (3, 25, 0)


@dataclass(frozen=True)
class Function:
    handler: str
    environment: dict[str, str]
    asset: Path  # the function's code as the assembly ships it
    event_queue_url: str  # its first event source (the apply queue's is in its environment)


def _stack(assembly: Assembly, concern: str) -> Any:
    return next(s for s in assembly.stacks if s.name.endswith(f"-{concern}"))


def consumer_asset(assembly: Assembly) -> Path:
    """The directory the assembly's asset manifest names for the consumer function's code."""
    ingest = _stack(assembly, "Ingest")
    (fn,) = [r for r in ingest.template["Resources"].values()
             if r["Type"] == "AWS::Lambda::Function"]
    asset_hash = fn["Properties"]["Code"]["S3Key"].removesuffix(".zip")
    source = ingest.asset_manifest["files"][asset_hash]["source"]
    assert source["packaging"] == "zip"
    return assembly.directory / source["path"]


def layer_version(assembly: Assembly) -> str:
    """The Powertools version of the layer the Ingest template resolves when it deploys."""
    ingest = _stack(assembly, "Ingest").template
    (fn,) = [r for r in ingest["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    (layer,) = fn["Properties"]["Layers"]
    parameter = ingest["Parameters"][layer["Ref"]]
    assert parameter["Type"] == "AWS::SSM::Parameter::Value<String>"
    return parameter["Default"].rsplit("/", 1)[1]


@pytest.fixture(scope="module")
def runtime_env() -> None:
    if not (LAMBDA_RUNTIME / ".installed").is_file():
        pytest.fail(f"{LAMBDA_RUNTIME} is missing: run `make {LAMBDA_RUNTIME}/.installed` "
                    "(a prerequisite of `make test`)")


@pytest.fixture
def function(moto_endpoint: str, runtime_env: None) -> Iterator[Function]:
    assembly = synthesized()["local"]
    outputs = deploy_to_moto(moto_endpoint, "local", assembly=assembly)
    config = boto3.client("lambda").get_function_configuration(
        FunctionName=outputs["IngestFunctionName"])
    yield Function(config["Handler"], config["Environment"]["Variables"],
                   consumer_asset(assembly), outputs["EventQueueUrl"])


@pytest.fixture
def xray_daemon() -> Iterator[socket.socket]:
    """A UDP socket standing where Lambda's X-Ray daemon listens."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    yield sock
    sock.close()


def receive_batch(queue_url: str, expected: int) -> dict[str, Any]:
    """The Lambda SQS event of the next `expected` messages, built as the event source
    mapping builds it from what it receives (at most 10 per batch)."""
    sqs = boto3.client("sqs")
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    messages: list[dict[str, Any]] = []
    for _ in range(10):
        messages += sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10 - len(messages), WaitTimeSeconds=0,
            MessageSystemAttributeNames=SYSTEM_ATTRIBUTES, MessageAttributeNames=["All"],
            ReceiveRequestAttemptId=str(uuid.uuid4())).get("Messages", [])
        if len(messages) == expected:
            break
    assert len(messages) == expected
    return {"Records": [lambda_record(m, queue_arn=queue_arn, region=sqs.meta.region_name)
                        for m in messages]}


def daemon_segments(sock: socket.socket) -> list[dict[str, Any]]:
    """The segment documents the X-Ray SDK sent: each datagram is a JSON header line, then
    the document."""
    documents = []
    while True:
        try:
            datagram = sock.recv(65536).decode()
        except TimeoutError:
            return documents
        header, _, document = datagram.partition("\n")
        assert json.loads(header) == {"format": "json", "version": 1}
        documents.append(json.loads(document))


def run_as_lambda(function: Function, event: dict[str, Any], tmp_path: Path,
                  xray_port: int) -> dict[str, Any]:
    event_file, out_file = tmp_path / "event.json", tmp_path / "out.json"
    event_file.write_text(json.dumps(event))
    env = {
        **function.environment,
        # What the Lambda service sets in every python3.11 execution environment.
        "LAMBDA_TASK_ROOT": str(function.asset),
        "AWS_LAMBDA_FUNCTION_NAME": "hdfs-events-ingest",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.11",
        "_X_AMZN_TRACE_ID": "Root=1-6745a1b2-0f1e2d3c4b5a69788796a5b4;"
                            "Parent=53995c3f42cd8ad8;Sampled=1",
        "AWS_XRAY_DAEMON_ADDRESS": f"127.0.0.1:{xray_port}",
        "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
        "TZ": ":UTC",
        # The role's credentials and the region; the endpoint is moto server's.
        **{k: os.environ[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                      "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
                                      "AWS_ENDPOINT_URL")},
    }
    # The interpreter the dev venv was made from, isolated: only the paths run_as_lambda sets.
    proc = subprocess.run(
        [sys._base_executable, "-I", "-S", str(RUN_AS_LAMBDA), str(function.asset), str(LAYER),
         str(RUNTIME_SDK), function.handler, str(event_file), str(out_file)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out_file.read_text())


def test_deployed_handler_writes_a_real_batch_to_the_lake_on_the_runtime_and_layer_only(
        function: Function, xray_daemon: socket.socket, tmp_path: Path) -> None:
    events = sample_events("demo")
    sent = with_manifests(pack(events, per_message=8))
    assert len(sent) <= 10  # one batch, as the event source mapping delivers it
    queue_url = function.event_queue_url
    sqs = boto3.client("sqs")
    for s in sent:
        attrs = {name: {"DataType": "String", "StringValue": value}
                 for name, value in (("encoding", s.encoding), ("kind", s.kind)) if value}
        sqs.send_message(QueueUrl=queue_url, MessageBody=s.body, MessageGroupId=s.group_id,
                         MessageDeduplicationId=s.dedup_id, MessageAttributes=attrs)

    result = run_as_lambda(function, receive_batch(queue_url, len(sent)), tmp_path,
                           xray_daemon.getsockname()[1])

    # What a user sees: no message fails, every event of the batch is in the lake's raw/.
    assert result["response"] == {"batchItemFailures": []}
    s3 = boto3.client("s3")
    bucket = function.environment[names.ENV_LAKE_BUCKET]
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=lake_layout.RAW_PREFIX)
            .get("Contents", [])]
    landed = sorted((e["txid"], e["index"]) for key in keys for line in lake_lines(
        s3.get_object(Bucket=bucket, Key=key)["Body"].read()) for e in [json.loads(line)])
    assert landed == sorted((e.txid, e.index) for e in events)
    # Active tracing works on the layer's X-Ray SDK and the runtime's botocore: the handler's,
    # each record's and the AWS calls' subsegments reached the daemon (sqs: the continue
    # request).
    traced = [segment["name"] for segment in daemon_segments(xray_daemon)]
    assert traced.count("## lambdas.ingest.handler.record_handler") == len(sent)
    assert {"## handler", "s3", "dynamodb", "sqs"} <= set(traced)

    # The batch left the index to the apply queue's mapping: its one request, run as deployed,
    # applies every range the batch closed.
    ddb, table = boto3.client("dynamodb"), function.environment[names.ENV_INDEX_TABLE]
    assert read_status(ddb, table, "demo").txid is None
    request = receive_batch(function.environment[names.ENV_APPLY_QUEUE_URL], 1)
    applied = run_as_lambda(function, request, tmp_path, xray_daemon.getsockname()[1])
    assert applied["response"] == {"batchItemFailures": []}
    status = read_status(ddb, table, "demo")
    assert (status.txid, status.index, status.waiting) == (max(e.txid for e in events), None,
                                                           False)

    # It ran on the Powertools the stack deploys, which is the one the tests pin (a layer
    # older than 3.25 lacks Metrics.add_dimensions and would fail every batch), and on the
    # runtime's SDK.
    versions = result["versions"]
    pinned = pinned_version(POWERTOOLS_DISTRIBUTION)
    assert {layer_version(synthesized()[env]) for env in ("dev", "prod")} == {pinned}
    assert versions["aws-lambda-powertools"] == pinned
    assert tuple(map(int, pinned.split("."))) >= FIRST_POWERTOOLS_WITH_ADD_DIMENSIONS
    sdk_pins = dict(line.split("==") for line in RUNTIME_SDK_PINS.read_text().splitlines()
                    if line and not line.startswith("#"))
    assert {k: versions[k] for k in sdk_pins} == sdk_pins
    # Every module it loaded came from the asset, the layer, the runtime's SDK or the standard
    # library: nothing from the repository or the dev venv.
    stdlib = sysconfig.get_paths(vars={"installed_base": sys.base_prefix,
                                       "base": sys.base_prefix})["stdlib"]
    roots = (f"{function.asset}/", f"{LAYER}/", f"{RUNTIME_SDK}/", f"{stdlib}/")
    assert [m for m in result["modules"] if not m.startswith(roots)] == []
    assert any(m.startswith(f"{function.asset}/lambdas/ingest/") for m in result["modules"])
