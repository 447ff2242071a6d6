"""Runs a Lambda handler the way the python3.11 runtime loads it, for test_lambda_asset.py.

Started as `python3.11 -I -S run_as_lambda.py TASK_ROOT LAYER RUNTIME HANDLER EVENT OUT`: no
site-packages, no PYTHON* variables, no script directory on sys.path. The path is then what
Lambda gives a function: the code (/var/task), the layer's python/ (/opt/python), the runtime's
own packages (boto3), the standard library. Until then only the standard library is imported.
Writes {"response", "versions", "modules"} as JSON to OUT: what the handler answered, the
versions it ran on, and the file of every module loaded.
"""

import importlib
import importlib.metadata
import json
import sys
import time

task_root, layer, runtime, handler_name, event_path, out_path = sys.argv[1:7]
sys.path[:0] = [task_root, layer, runtime]


class Context:
    """The attributes of Lambda's context object the handler and Powertools read."""

    function_name = "hdfs-events-ingest"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:hdfs-events-ingest"
    aws_request_id = "3f1c9a52-7e1d-4c4e-9d57-2b4f5f0a9b11"
    log_group_name = "/aws/lambda/hdfs-events-ingest"
    log_stream_name = "2026/11/26/[$LATEST]deployed"

    def __init__(self, timeout_ms: int) -> None:
        self._deadline = time.monotonic() + timeout_ms / 1000

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


module_name, _, function_name = handler_name.rpartition(".")
handler = getattr(importlib.import_module(module_name), function_name)
with open(event_path) as f:
    event = json.load(f)
response = handler(event, Context(timeout_ms=60_000))
result = {
    "response": response,
    "versions": {d: importlib.metadata.version(d)
                 for d in ("boto3", "botocore", "aws-lambda-powertools", "aws-xray-sdk")},
    # This script stands where Lambda's own bootstrap does: not counted (some library loads
    # it a second time under another name).
    "modules": sorted({m.__file__ for m in list(sys.modules.values())
                       if getattr(m, "__file__", None) not in (None, __file__)}),
}
with open(out_path, "w") as f:
    json.dump(result, f)
