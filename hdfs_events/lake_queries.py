"""SQL the lake is asked through Athena, shared by the saved queries (stacks/lake_catalog.py)
and the CLI (`hdfs-events who`), so the console's query and the command's are one text.

A path goes in as an SQL expression: the saved query's example is a quoted literal an operator
edits; the CLI passes `?` and binds the path as an Athena execution parameter, because a path is
user input and a quote in it must never reach the SQL text.
"""

from __future__ import annotations

from hdfs_events.lake_layout import ATTRIBUTION_TABLE, EVENTS_TABLE

# The attribution table's columns the CLI prints besides the user.
WHO_DETAIL_COLUMNS = ("auth", "real_user", "client_ip")


def history_of_one_path(path: str, *, since: tuple[str, str] | None = None,
                        cluster: str | None = None, detail: bool = False) -> str:
    """Every change naming `path` (as source or rename destination), oldest first, with who made
    it: the attribution row of its (cluster, txid, index), if any (a LEFT JOIN: an event whose
    user is not certain stays, with a null user).

    path, cluster: SQL expressions. since: (day, epoch ms) SQL expressions; the day bound on `dt` lets
    Athena read only the days from then on (partition pruning), the millisecond bound cuts the
    first day at the hour asked. detail: add the attribution's auth, real user and client IP."""
    who = "a.user" + "".join(f", a.{c}" for c in WHO_DETAIL_COLUMNS) if detail else "a.user"
    where = f"e.path = {path} OR e.dst_path = {path}"
    if since is not None:
        day, millis = since
        where = f"({where})\n  AND e.dt >= {day} AND e.timestamp >= {millis}"
    if cluster is not None:
        where = f"({where})\n  AND e.cluster = {cluster}" if since is None else \
            f"{where} AND e.cluster = {cluster}"
    return (f"SELECT e.cluster, e.txid, e.index, e.type, e.path, e.dst_path, e.timestamp, e.size,\n"
            f"       e.owner, e.perms, {who}\n"
            f"FROM {EVENTS_TABLE} e\n"
            f"LEFT JOIN {ATTRIBUTION_TABLE} a\n"
            f"  ON a.cluster = e.cluster AND a.txid = e.txid AND a.index = e.index\n"
            f"WHERE {where}\n"
            f"ORDER BY e.cluster, e.txid, e.index")
