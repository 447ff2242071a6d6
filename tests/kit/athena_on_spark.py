"""An engine for moto 5.2's Athena: StartQueryExecution runs the query's SQL, its
ExecutionParameters bound, in a local SparkSession; GetQueryExecution and GetQueryResults
answer from that run.

What is real: the client (boto3 over HTTP to the moto server, request and response shapes as
botocore's Athena model has them), moto's own workgroup check and query ids, and what this kit
adds to moto's responses the way Athena gives them: the header row first in the first page of
GetQueryResults (Athena's result set of a SELECT starts with the column names), pages of at
most MaxResults rows (Athena's limit: 1000) chained by NextToken, a FAILED state with its
StateChangeReason when the engine refuses the query.

What the kit supplies: the engine. moto does not run SQL (it returns canned results); here Spark
SQL does, over whatever tables the caller registered in the session (tests/kit/athena_tables.py
for the synthesized template's Glue tables, or views). Execution parameters are bound as Athena
binds them: each `?` outside a string literal, in order, takes one parameter, which must be one
SQL literal (a quoted string with quotes doubled, a number); anything else fails the query, as a
value Athena cannot read as a literal does. The string is re-rendered as a Spark literal (Spark
reads 'it''s' as two adjacent literals, "its"), so the value that reaches the engine is the
parameter's, not SQL text. The SQL is run in the request's thread: a query is SUCCEEDED or
FAILED before StartQueryExecution returns.

Scope: `apply(spark)` patches moto's Athena classes for the calling process; the moto server
must run in it (ThreadedMotoServer, as tests/conftest.py and local_chain.local_aws start it).
"""

from __future__ import annotations

import json
import re
from typing import Any

from moto.athena.models import AthenaBackend, QueryResults
from moto.athena.responses import AthenaResponse
from pyspark.sql import SparkSession

# Athena's GetQueryResults MaxResults: 1000 at most (its API reference).
MAX_RESULTS = 1000
_LITERAL = re.compile(r"\s*(?:'((?:[^']|'')*)'|(-?[0-9]+(?:\.[0-9]+)?))\s*")
_STRINGS = re.compile(r"('(?:[^']|'')*')")

_engine: SparkSession | None = None
_failed: dict[str, str] = {}  # query id -> StateChangeReason
_applied = False


class BadParameter(ValueError):
    pass


def _spark_literal(parameter: str) -> str:
    m = _LITERAL.fullmatch(parameter)
    if m is None:
        raise BadParameter(f"execution parameter {parameter!r} is not one SQL literal")
    if m[2] is not None:
        return m[2]
    value = m[1].replace("''", "'")
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def bind(sql: str, parameters: list[str] | None) -> str:
    """The SQL with each `?` outside string literals replaced by its parameter, in order."""
    params = list(parameters or [])
    parts = _STRINGS.split(sql)
    wanted = sum(p.count("?") for p in parts[0::2])
    if wanted != len(params):
        raise BadParameter(f"{wanted} parameter placeholder(s), {len(params)} execution "
                           "parameter(s)")
    literals = iter(_spark_literal(p) for p in params)
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"\?", lambda _: next(literals), parts[i])
    return "".join(parts)


def _column_type(spark_type: str) -> str:
    return {"bigint": "bigint", "int": "integer", "string": "varchar", "boolean": "boolean",
            "double": "double", "date": "date", "timestamp": "timestamp"}.get(spark_type,
                                                                            spark_type)


def _cell(value: Any) -> dict[str, str]:
    if value is None:
        return {}  # Athena leaves VarCharValue out of a null cell
    if isinstance(value, bool):
        return {"VarCharValue": str(value).lower()}
    return {"VarCharValue": str(value)}


def _run(query: str, parameters: list[str] | None) -> QueryResults:
    assert _engine is not None
    frame = _engine.sql(bind(query, parameters))
    names = frame.columns
    columns = [{"CatalogName": "hive", "SchemaName": "", "TableName": "", "Name": n, "Label": n,
                "Type": _column_type(t), "Precision": 0, "Scale": 0, "Nullable": "UNKNOWN",
                "CaseSensitive": t == "string"} for n, t in frame.dtypes]
    header = {"Data": [{"VarCharValue": n} for n in names]}
    rows = [{"Data": [_cell(v) for v in row]} for row in frame.collect()]
    return QueryResults(rows=[header, *rows], column_info=columns)


def apply(spark: SparkSession) -> None:
    """Answer moto's Athena with `spark` from now on (a second call changes the session)."""
    global _engine, _applied
    _engine = spark
    if _applied:
        return
    start, get_execution = AthenaBackend.start_query_execution, AthenaResponse.get_query_execution

    def start_query_execution(self: AthenaBackend, query: str, context: str,
                              config: dict[str, Any], workgroup: str,
                              execution_parameters: list[str] | None) -> str:
        query_id = start(self, query, context, config, workgroup, execution_parameters)
        try:
            self.query_results[query_id] = _run(query, execution_parameters)
        except Exception as exc:  # the engine's refusal is the query's FAILED reason
            _failed[query_id] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        return query_id

    def get_query_execution(self: AthenaResponse) -> str:
        body = json.loads(get_execution(self))
        execution = body["QueryExecution"]
        if execution["QueryExecutionId"] in _failed:
            execution["Status"].update(State="FAILED", StateChangeReason=_failed[
                execution["QueryExecutionId"]])
        return json.dumps(body)

    def get_query_results(self: AthenaResponse) -> str | tuple[str, dict[str, int]]:
        query_id = self._get_param("QueryExecutionId")
        if query_id in _failed:
            return self.error("Query has not yet finished. Current state: FAILED", 400)
        result = self.athena_backend.get_query_results(query_id).to_dict()
        limit = int(self._get_param("MaxResults") or MAX_RESULTS)
        first = int(self._get_param("NextToken") or 0)
        rows = result["ResultSet"]["Rows"]
        result["ResultSet"]["Rows"] = rows[first:first + limit]
        if first + limit < len(rows):
            result["NextToken"] = str(first + limit)
        return json.dumps(result)

    AthenaBackend.start_query_execution = start_query_execution  # type: ignore[method-assign]
    AthenaResponse.get_query_execution = get_query_execution  # type: ignore[method-assign]
    AthenaResponse.get_query_results = get_query_results  # type: ignore[method-assign]
    _applied = True
