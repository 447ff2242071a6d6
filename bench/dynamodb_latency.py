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

With BENCH_DDB_KEY_WCU set (`plugin_env(key_limit=True)`), the double also models DynamoDB's
write limit per partition key (1,000 WCU/s; an index item is one WCU, well under 1 KB): the items
past it in the current second of the clock go back as UnprocessedItems, as AWS answers a hot key,
and the job sends them again (glue_jobs/image_index.py). Counted per process: two tasks writing
one key in two Python workers get up to twice the limit through, so the throttling it shows is a
lower bound of AWS's.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

from hdfs_events.names import INDEX_PK

LATENCY_ENV = "BENCH_DDB_LATENCY_MS"
KEY_WCU_ENV = "BENCH_DDB_KEY_WCU"
PARTITION_KEY_WCU = 1000  # DynamoDB's write limit per partition key, items of <= 1 KB a second
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


class _KeyLimit:
    """The items each partition key took in the current second of this process's clock."""

    def __init__(self, per_s: int) -> None:
        self.per_s = per_s
        self._lock = threading.Lock()
        self._second = -1
        self._taken: Counter[str] = Counter()

    def reply(self, body: bytes) -> bytes:
        """The reply to a BatchWriteItem of `body`: the puts past a key's limit unprocessed."""
        requests = json.loads(body)["RequestItems"]
        unprocessed: dict[str, list[Any]] = {}
        with self._lock:
            second = int(time.monotonic())
            if second != self._second:
                self._second, self._taken = second, Counter()
            for table, writes in requests.items():
                for write in writes:
                    # a first start's puts, a repair's deletes too (glue_jobs/image_index.py)
                    key = (write["PutRequest"]["Item"] if "PutRequest" in write
                           else write["DeleteRequest"]["Key"])[INDEX_PK]["S"]
                    if self._taken[key] < self.per_s:
                        self._taken[key] += 1
                    else:
                        unprocessed.setdefault(table, []).append(write)
        return json.dumps({"UnprocessedItems": unprocessed}).encode() if unprocessed else b"{}"


_key_limit: _KeyLimit | None = None


def _answer(request: Any, **_: Any) -> Any:
    from botocore.awsrequest import AWSResponse

    global _key_limit
    time.sleep(float(os.environ[LATENCY_ENV]) / 1000)
    per_s = os.environ.get(KEY_WCU_ENV)
    if not per_s or not request.headers.get("X-Amz-Target", b"").endswith(b".BatchWriteItem"):
        return AWSResponse(request.url, 200, {}, _Reply(b"{}"))
    if _key_limit is None:
        _key_limit = _KeyLimit(int(per_s))
    return AWSResponse(request.url, 200, {}, _Reply(_key_limit.reply(request.body)))


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


def plugin_env(latency_ms: float, key_limit: bool = False) -> dict[str, str]:
    """The environment that makes every DynamoDB client of a process (and its children) write
    through the double (initialize_client_plugin); with `key_limit`, DynamoDB's per-key
    limit modelled."""
    return {PLUGINS_ENV: f"bench_dynamodb_latency={__name__}", LATENCY_ENV: str(latency_ms),
            KEY_WCU_ENV: str(PARTITION_KEY_WCU) if key_limit else ""}
