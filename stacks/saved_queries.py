"""Saved Logs Insights queries, under the deployment's prefix in the console's query list: the
consumer's per-event lines and the attribution job's who-made-it lines."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Stack
from aws_cdk import aws_logs as logs

# Fields the consumer logs on each event line (powertools puts extra keys at the top level).
LOGS_QUERIES: dict[str, logs.QueryString] = {
    "who-deleted-what-under-a-path": logs.QueryString(
        fields=["@timestamp", "cluster", "txid", "type", "path", "dst_path"],
        filter_statements=[
            "type in ['UNLINK', 'RENAME']",
            # Edit the prefix; RENAME counts as a delete when it moves a path out.
            "path like /^\\/user\\/alice\\//",
        ],
        sort="@timestamp desc", limit=1000),
    "history-of-one-path": logs.QueryString(
        fields=["@timestamp", "cluster", "txid", "index", "type", "path", "dst_path"],
        filter_statements=["path = '/user/alice/data/part-0000' or "
                           "dst_path = '/user/alice/data/part-0000'"],
        sort="txid asc", limit=10000),
    "top-writers-by-directory": logs.QueryString(
        filter_statements=["type in ['CREATE', 'CLOSE', 'APPEND']"],
        parse_statements=["path /^(?<dir>\\/[^\\/]+\\/[^\\/]+)/"],
        stats="count(*) as changes by cluster, dir",
        sort="changes desc", limit=50),
    # The consumer's ERROR line of each GAP record (lambdas/ingest/logging_modes.py).
    "inotify-gaps": logs.QueryString(
        fields=["@timestamp", "cluster", "txid", "gap_end_txid", "lost_txids", "detected_ms",
                "message_id"],
        filter_statements=["type = 'GAP'"],
        sort="@timestamp desc", limit=1000),
    # The consumer's failures to apply ranges (ERROR, with the stack trace), ranges that went on
    # without quarantined messages (WARNING) or a lost manifest (ERROR), events skipped
    # (WARNING), lambdas/ingest/consumer.py.
    "index-apply-problems": logs.QueryString(
        fields=["@timestamp", "level", "cluster", "message", "messages", "range", "txid",
                "path", "reason", "exception"],
        filter_statements=["message like /^index (apply failed|continue request failed|skipped|passed)/"],
        sort="@timestamp desc", limit=1000),
    # The consumer's INFO line of each quarantined message (lambdas/ingest/consumer.py
    # _quarantine): the reason and where its record sits in the lake.
    "quarantined-messages": logs.QueryString(
        fields=["@timestamp", "message_id", "group_id", "reason", "quarantine_key"],
        filter_statements=["message = 'message quarantined'"],
        sort="@timestamp desc", limit=1000),
}


# Over the attribution job's log group (glue_jobs/attribution_log.py): one line per changed
# attribution, the event and its user on one line. An event can have several lines (re-attributed
# by a late audit line, or logged again by a retried run), and the latest is its answer: each
# query keeps one line per (cluster, txid, index), by `dedup` after a sort on @timestamp (the
# time the line was logged; `dedup` admits only `limit` after it) or by `latest()` grouped by
# the key, so a repeated line cannot double a count. A line without `user` is an event whose
# attribution was withdrawn: coalesce shows it as "(unknown)", never as its old user.
# Raw query strings (CfnQueryDefinition): CDK's QueryString has no dedup and a fixed order.
ATTRIBUTION_LOGS_QUERIES: dict[str, str] = {
    # Edit the prefix; a RENAME out of the prefix is found by its path, into it by its dst_path.
    "attribution/who-changed-what-under-a-path": "\n| ".join((
        "fields @timestamp, cluster, txid, index, type, path, dst_path, timestamp, user, "
        "real_user, client_ip, caller_context",
        "filter path like /^\\/user\\/alice\\// or dst_path like /^\\/user\\/alice\\//",
        "sort @timestamp desc",
        "dedup cluster, txid, index",
        "limit 10000")),
    # UNLINKs and moves to a trash directory (`hdfs dfs -rm` without -skipTrash), per user.
    "attribution/deletes-by-user": "\n| ".join((
        "filter type = 'UNLINK' or (type = 'RENAME' and dst_path like /\\/\\.Trash\\//)",
        "fields coalesce(user, '(unknown)') as who",
        "stats latest(who) as deleted_by by cluster, txid, index",
        "stats count(*) as deletes by cluster, deleted_by",
        "sort deletes desc",
        "limit 1000")),
    # Edit the user; sorted by the NameNode's time of each change.
    "attribution/changes-by-user": "\n| ".join((
        "fields coalesce(user, '(unknown)') as who",
        "stats latest(who) as changed_by, latest(type) as change, latest(path) as on_path, "
        "latest(dst_path) as to_path, latest(timestamp) as namenode_ms, "
        "latest(client_ip) as from_ip by cluster, txid, index",
        "filter changed_by = 'alice'",
        "sort namenode_ms desc",
        "limit 10000")),
}


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
