"""BatchWriteItem calls to one table whose request bodies are already DynamoDB's wire JSON (the
image job's items, built by the JVM: glue_jobs/index_item_json.py), through botocore.

A client call does most of its work again for every call although only the body changes:
parameter events, the endpoint ruleset, validation and serialization, the user-agent string:
~200 of its ~430 µs of CPU a call of 25 items on this machine, more than building the items.
`BatchWriteCalls` makes that request once (one `batch_write_item` that stops at `before-call`,
as botocore's Stubber answers, so nothing is sent) and then hands each body to the client's
endpoint as `_make_api_call` does after `before-call`: botocore still signs every request
(SigV4 over the body and the time), retries it in standard mode (`needs-retry`, the retry
quota released at `after-call`), parses the reply and raises the service's errors; only what
is the same for every call is done once. botocore has no public way to send a prepared request,
hence the client's `_endpoint`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.context import ClientContext, get_context, reset_context, set_context

_OPERATION = "BatchWriteItem"


class WireBody(bytes):
    """A BatchWriteItem request body, JSON: {"RequestItems": {table: [write requests]}}."""

    @classmethod
    def of_requests(cls, table: str, write_requests: Sequence[str]) -> WireBody:
        """From write requests already in JSON text ('{"PutRequest":{"Item":{...}}}' or
        '{"DeleteRequest":{"Key":{...}}}'; one call may mix them, never two of one key)."""
        return cls(('{"RequestItems":{' + json.dumps(table) + ":[" + ",".join(write_requests)
                    + "]}}").encode())

    @classmethod
    def of_unprocessed(cls, unprocessed: dict[str, Any]) -> WireBody:
        """From a reply's UnprocessedItems (botocore parsed them: wire format, plain JSON)."""
        return cls(json.dumps({"RequestItems": unprocessed}, separators=(",", ":")).encode())


class BatchWriteCalls:
    """BatchWriteItem calls of `client` (a botocore DynamoDB client) with ready bodies."""

    def __init__(self, client: Any, table: str) -> None:
        self._client = client
        self._model = client.meta.service_model.operation_model(_OPERATION)
        self._event = client.meta.service_model.service_id.hyphenize() + "." + _OPERATION
        captured: dict[str, Any] = {}

        def capture(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
            captured.update(params)
            captured["features"] = set(get_context().features)
            return AWSResponse(params["url"], 200, {}, None), {}

        # A valid call (the placeholder item is serialized, then replaced by each body).
        client.meta.events.register_first(f"before-call.{self._event}", capture)
        try:
            client.batch_write_item(
                RequestItems={table: [{"PutRequest": {"Item": {"k": {"S": "k"}}}}]})
        finally:
            client.meta.events.unregister(f"before-call.{self._event}", capture)
        self._request = {k: v for k, v in captured.items()
                         if k not in ("body", "context", "features")}
        # What the user agent reports (botocore rebuilds it for every request from the call's
        # context): the features the prepared call used, the endpoint's account ID mode say.
        self._features: set[str] = captured["features"]
        # Per call: the retry state (`retries`) is the call's own; the rest is what the
        # endpoint, auth and checksum resolution put there once.
        self._context = {k: v for k, v in captured["context"].items() if k != "retries"}

    def send(self, body: bytes) -> dict[str, Any]:
        """The parsed reply (UnprocessedItems among it); the service's errors raised as the
        client raises them."""
        context = {k: dict(v) if isinstance(v, dict) else v for k, v in self._context.items()}
        request = {**self._request, "headers": dict(self._request["headers"]), "body": body,
                   "context": context}
        client = self._client
        token = set_context(ClientContext(set(self._features)))
        try:
            http, parsed = client._endpoint.make_request(self._model, request)
        except Exception as e:
            client.meta.events.emit(f"after-call-error.{self._event}", exception=e,
                                    context=context)
            raise
        finally:
            reset_context(token)
        client.meta.events.emit(f"after-call.{self._event}", http_response=http,
                                parsed=parsed, model=self._model, context=context)
        if http.status_code >= 300:
            code = context.get("error_code_override") or parsed.get("Error", {}).get("Code")
            raise client.exceptions.from_code(code)(parsed, _OPERATION)
        return parsed
