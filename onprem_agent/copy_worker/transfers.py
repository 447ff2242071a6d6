"""The transfers table: one item per copy request, moved through its states by conditional
writes.

    requested --> running --> verified
        |            |  ^
        |            v  |  (redelivery: attempts + 1)
        |          failed --(final)--> the message goes to the dead-letter queue
        v            v
     rejected <------'   (validation, allow-list or manifest check failed: never retried)

Every write carries a condition, so the item is the arbiter when SQS delivers a request twice:
`begin` refuses a request that is already verified or rejected (the redelivery is deleted, not
copied again) or whose request_id was recorded with different content; `verified` and `failed`
only apply while the item is still at the attempt that started them, so a worker that lost its
message to another cannot overwrite the newer attempt's result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from hdfs_events import names
from hdfs_events.copy_request import CopyRequest, TransferState
from hdfs_events.dynamodb_json import from_wire, to_wire
from hdfs_events.transfer_item import (
    ATTEMPTS,
    CLUSTER,
    CREATED_AT,
    FINAL,
    FINGERPRINT,
    HISTORY,
    REASON,
    REASON_MAX_CHARS,
    REQUEST_ID,
    STATE,
    failed,
    history_entry,
    iso,
    item_key,
    rejected,
    running,
    verified,
)
from onprem_agent.copy_worker.failures import Rejected


class AlreadyFinished(Exception):
    """The request reached a final state before; this delivery has nothing left to do."""

    def __init__(self, state: str) -> None:
        super().__init__(state)
        self.state = state


class StaleAttempt(Exception):
    """The item moved on (another worker started a newer attempt); this result is dropped."""


class TransfersTable:
    def __init__(self, dynamodb: Any, table_name: str, *, cluster: str, retention_days: int,
                 clock: Callable[[], float] = time.time) -> None:
        self._ddb = dynamodb
        self._table = table_name
        self._cluster = cluster
        self._retention_days = retention_days
        self._clock = clock

    def get(self, request_id: str) -> dict[str, Any] | None:
        item = self._ddb.get_item(TableName=self._table, ConsistentRead=True,
                                  Key=self._key(request_id)).get("Item")
        return None if item is None else from_wire(item)

    def begin(self, request: CopyRequest, *, worker: str, message_id: str) -> int:
        """Marks the request running and returns its attempt number (1 for the first).

        Raises AlreadyFinished when it is verified or rejected, Rejected when the request_id
        was recorded for a different request."""
        now = self._clock()
        values = running(request, now, self._retention_days, worker=worker,
                         message_id=message_id)
        set_once = {CREATED_AT: iso(now), CLUSTER: self._cluster,
                    REQUEST_ID: request.request_id}
        try:
            result = self._update(
                request.request_id,
                set_values=values, set_if_absent=set_once, increment=ATTEMPTS,
                history=history_entry(TransferState.RUNNING, now, worker=worker),
                remove=(REASON, FINAL),
                condition="attribute_not_exists(#pk) OR (#fingerprint = :c_fp AND "
                          "#state IN (:c_requested, :c_running, :c_failed))",
                condition_values={"c_fp": request.fingerprint,
                                  "c_requested": TransferState.REQUESTED.value,
                                  "c_running": TransferState.RUNNING.value,
                                  "c_failed": TransferState.FAILED.value},
                return_new=True)
        except self._ddb.exceptions.ConditionalCheckFailedException:
            item = self.get(request.request_id) or {}
            state = item.get(STATE, "")
            if item.get(FINGERPRINT) != request.fingerprint:
                raise Rejected(f"request_id: {request.request_id!r} was already used for a "
                               "different request") from None
            raise AlreadyFinished(state) from None
        return int(result[ATTEMPTS])

    def verified(self, request_id: str, attempt: int, *, bytes_copied: int, files: int,
                 duration_ms: int) -> None:
        now = self._clock()
        self._finish(request_id, attempt, verified(now, bytes_copied=bytes_copied, files=files,
                                                   duration_ms=duration_ms),
                     history=history_entry(TransferState.VERIFIED, now))

    def failed(self, request_id: str, attempt: int, *, reason: str, final: bool,
               retry_in_s: int | None, duration_ms: int) -> None:
        now = self._clock()
        values = failed(now, reason=reason, final=final, retry_in_s=retry_in_s,
                        duration_ms=duration_ms)
        self._finish(request_id, attempt, values, history=history_entry(
            TransferState.FAILED, now, attempt=attempt, reason=reason[:REASON_MAX_CHARS],
            final=final))

    def rejected(self, key: str, *, reason: str, request: CopyRequest | None,
                 body_preview: str | None, attempt: int | None) -> bool:
        """Records a rejection under `key`. Returns False when the item there may not be
        overwritten (it belongs to a different request, or finished): the caller then records
        under a key of its own."""
        now = self._clock()
        values = rejected(now, self._retention_days, reason=reason, request=request,
                          body_preview=body_preview)
        condition = "attribute_not_exists(#pk)"
        condition_values: dict[str, Any] = {}
        if request is not None:
            condition += (" OR (#state = :c_requested AND #fingerprint = :c_fp)"
                          " OR (#state = :c_running AND #attempts = :c_attempt)")
            condition_values = {"c_requested": TransferState.REQUESTED.value,
                                "c_running": TransferState.RUNNING.value,
                                "c_fp": request.fingerprint, "c_attempt": attempt or -1}
        try:
            self._update(key, set_values=values,
                         set_if_absent={CREATED_AT: iso(now), CLUSTER: self._cluster,
                                        REQUEST_ID: key},
                         history=history_entry(TransferState.REJECTED, now,
                                               reason=reason[:REASON_MAX_CHARS]),
                         condition=condition, condition_values=condition_values)
        except self._ddb.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def _finish(self, request_id: str, attempt: int, values: Mapping[str, Any],
                history: Mapping[str, Any]) -> None:
        try:
            self._update(request_id, set_values=values, history=history,
                         condition="#state = :c_running AND #attempts = :c_attempt",
                         condition_values={"c_running": TransferState.RUNNING.value,
                                           "c_attempt": attempt})
        except self._ddb.exceptions.ConditionalCheckFailedException:
            raise StaleAttempt(f"{request_id}: attempt {attempt} is no longer current") from None

    def _update(self, key: str, *, set_values: Mapping[str, Any],
                set_if_absent: Mapping[str, Any] | None = None, increment: str | None = None,
                history: Mapping[str, Any] | None = None, remove: tuple[str, ...] = (),
                condition: str, condition_values: Mapping[str, Any],
                return_new: bool = False) -> dict[str, Any]:
        # Every attribute goes through #name placeholders: state, source, mode, bytes and size
        # are DynamoDB reserved words.
        attr_names: dict[str, str] = {"#pk": names.TRANSFERS_PK, "#state": STATE,
                                      "#fingerprint": FINGERPRINT, "#attempts": ATTEMPTS}
        attr_values: dict[str, Any] = {}
        clauses = []
        for i, (name, value) in enumerate(set_values.items()):
            attr_names[f"#s{i}"] = name
            attr_values[f":s{i}"] = value
            clauses.append(f"#s{i} = :s{i}")
        for i, (name, value) in enumerate((set_if_absent or {}).items()):
            attr_names[f"#o{i}"] = name
            attr_values[f":o{i}"] = value
            clauses.append(f"#o{i} = if_not_exists(#o{i}, :o{i})")
        if increment:
            attr_names["#inc"] = increment
            attr_values[":zero"], attr_values[":one"] = 0, 1
            clauses.append("#inc = if_not_exists(#inc, :zero) + :one")
        if history is not None:
            attr_names["#history"] = HISTORY
            attr_values[":entry"], attr_values[":empty"] = [dict(history)], []
            clauses.append("#history = list_append(if_not_exists(#history, :empty), :entry)")
        expression = "SET " + ", ".join(clauses)
        if remove:
            for i, name in enumerate(remove):
                attr_names[f"#r{i}"] = name
            expression += " REMOVE " + ", ".join(f"#r{i}" for i in range(len(remove)))
        for name, value in condition_values.items():
            attr_values[f":{name}"] = value
        used = expression + " " + condition
        response = self._ddb.update_item(
            TableName=self._table, Key=self._key(key),
            UpdateExpression=expression, ConditionExpression=condition,
            ExpressionAttributeNames={k: v for k, v in attr_names.items() if k in used},
            ExpressionAttributeValues=to_wire(attr_values),
            ReturnValues="ALL_NEW" if return_new else "NONE")
        return from_wire(response.get("Attributes", {}))


    def _key(self, request_id: str) -> dict[str, Any]:
        return to_wire(item_key(self._cluster, request_id))
