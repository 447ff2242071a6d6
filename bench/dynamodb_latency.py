"""A DynamoDB double for the image job's index writes (named as one): the job's own botocore
client, whose HTTP exchange waits BENCH_DDB_LATENCY_MS and answers an empty success (botocore's
`before-send`): nothing stored, nothing sent. Everything the client does for a call is paid as
on AWS (glue_jobs.wire_batch_write: the request prepared once a task, then signing, the retry
loop and the reply's parsing every call); not counted: the socket and TLS work of a real
exchange. moto is no stand-in here: it costs more than 5 ms per 25-item BatchWriteItem itself
(bench/index_apply.py's hook adds the latency to moto's own time, right for one sequential
applier, not for many writers), and cannot hold 10M index items.

Two ways in:
- `latency_dynamodb`, a ClientFactory for `write_index(client=...)`: every call of the client
  answered (bench.first_start's apply rate, no moto at all);
- `initialize_client_plugin`, botocore's client plugin hook: with `plugin_env()` in a process's
  environment, every DynamoDB client made there (the job's driver and its Python workers alike)
  has its BatchWriteItem answered by the double, its other calls (the position's GetItem and
  PutItem) going to moto as before: the job run unchanged, as tests/kit/glue_runs.py runs it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

LATENCY_ENV = "BENCH_DDB_LATENCY_MS"
# botocore imports each `name=module` listed here for every client it makes and calls
# the module's initialize_client_plugin(client). Experimental in botocore: plugin_env's users
# check that the double answered (no index item stored), so a botocore without it fails loudly.
PLUGINS_ENV = "BOTOCORE_EXPERIMENTAL__PLUGINS"


class _Reply:
    """An HTTP reply's body as botocore reads it (AWSResponse.raw)."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        return iter([self.body])


def _answer(request: Any, **_: Any) -> Any:
    from botocore.awsrequest import AWSResponse

    time.sleep(float(os.environ[LATENCY_ENV]) / 1000)
    return AWSResponse(request.url, 200, {}, _Reply(b"{}"))


def latency_dynamodb(threads: int) -> Any:
    """glue_jobs.image_index.dynamodb_client, every call answered by the double. Made on each
    executor (a ClientFactory: pickled by reference)."""
    from glue_jobs.image_index import dynamodb_client

    client = dynamodb_client(threads)
    client.meta.events.register("before-send.dynamodb.*", _answer)
    return client


def initialize_client_plugin(client: Any) -> None:
    """botocore's plugin hook: a DynamoDB client's BatchWriteItem answered by the double."""
    if client.meta.service_model.service_name == "dynamodb":
        client.meta.events.register("before-send.dynamodb.BatchWriteItem", _answer)


def plugin_env(latency_ms: float) -> dict[str, str]:
    """The environment that makes every DynamoDB client of a process (and its children) write
    through the double (initialize_client_plugin)."""
    return {PLUGINS_ENV: f"bench_dynamodb_latency={__name__}", LATENCY_ENV: str(latency_ms)}
