"""boto3 clients with the consumer's retry policy, for every store of lambdas/ingest.

Clients are passed in (or made plainly from the standard chain), so the same code reaches AWS,
moto in-process and moto server. Transient failures (throttling, 5xx, connection errors) are
retried by botocore's standard retry mode and then raised: the record fails and SQS redelivers
it. Only a failed write condition is an expected outcome in the stores, returned as a value.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

# botocore standard mode: exponential backoff with jitter on throttling and 5xx; max_attempts
# counts retries, so a request is tried 4 times in all.
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3})


def client(service: str, config: Config | None = None) -> Any:
    """A client for `service` with CLIENT_CONFIG (merged with `config`, when given)."""
    merged = CLIENT_CONFIG if config is None else CLIENT_CONFIG.merge(config)
    return boto3.client(service, config=merged)  # type: ignore[call-overload]
