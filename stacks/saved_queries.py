"""Saved Logs Insights queries, under the deployment's prefix in the console's query list."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Stack
from aws_cdk import aws_logs as logs


def add_saved_queries(stack: Stack, *, prefix: str, log_group: logs.ILogGroup,
                      queries: Mapping[str, logs.QueryString]) -> None:
    """Queries over one log group of this deployment. The stack is their scope (this is no
    Construct) so their logical IDs stay those already deployed."""
    for query_id, query in queries.items():
        logs.QueryDefinition(stack, f"Query-{query_id}",
                             query_definition_name=f"{prefix}/{query_id}",
                             query_string=query, log_groups=[log_group])


def add_raw_saved_queries(stack: Stack, *, prefix: str, log_group_name: str,
                          queries: Mapping[str, str]) -> None:
    """Queries written as Logs Insights text (CDK's QueryString has no `dedup` and a fixed
    order of commands), over a log group named rather than referenced: a plain name reads
    another stack's group without an export. A "/" in a query id names a folder in the
    console; a logical ID cannot hold one."""
    for query_id, text in queries.items():
        logs.CfnQueryDefinition(stack, f"Query-{query_id.replace('/', '-')}",
                                name=f"{prefix}/{query_id}", query_string=text,
                                log_group_names=[log_group_name])
