"""Which principal may send a cluster's messages: SQS's SenderId against each cluster's own.

SQS stamps every message with the IAM unique id of the caller of SendMessage (attribute
SenderId): "AIDA..." for an IAM user, "AROA...:<session name>" for a role session (IAM Roles
Anywhere names the session after the certificate's serial number). The body's `cluster` field is
the sender's word; the SenderId is AWS's. A message is accepted for a cluster only when
1. its SenderId (the part before ':', the role's id for a session) is one of that cluster's
   principals, and
2. its message group is one of the cluster's ("<cluster>:<group key>", hdfs_events.ids), so one
   cluster's messages cannot hold up another's groups either.

Unique ids, not names: a user deleted and re-created under the same name gets a new id, so a key
of the old one never matches. CloudFormation gives a role's id (Fn::GetAtt Role.RoleId) but has
no attribute for a user's, so the stack passes each cluster's user ARN and the consumer asks
IAM (GetUser) once per container; see docs/consumer.md, "Cluster identity".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hdfs_events.ids import IAM_UNIQUE_ID
from hdfs_events.validation import preview

# arn:aws:iam::123456789012:user/path/name (partitions aws, aws-cn, aws-us-gov).
USER_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:user/(?:[!-~]*/)?([\w+=,.@-]{1,64})")


@dataclass(frozen=True, slots=True)
class ClusterSenders:
    """Each cluster's principals by IAM unique id (users' ids and roles' ids)."""

    principals: Mapping[str, frozenset[str]]

    def problem(self, cluster: str, sender_id: str | None, group_id: str | None) -> str | None:
        """Why a message claiming `cluster` is not that cluster's own, or None when it is."""
        if not sender_id:
            return "message has no SenderId attribute: its sender cannot be checked"
        principal = sender_id.split(":", 1)[0]
        if principal not in self.principals.get(cluster, frozenset()):
            owners = sorted(c for c, ids in self.principals.items() if principal in ids)
            whose = (f"the principal of cluster(s) {owners}" if owners
                     else "not the principal of any cluster")
            return (f"sender {preview(principal)} may not send events of cluster {cluster!r}: "
                    f"it is {whose}")
        if not (group_id or "").startswith(f"{cluster}:"):
            return (f"message group {preview(group_id)} is not one of cluster {cluster!r}'s "
                    f"groups ('{cluster}:...')")
        return None

    def allows(self, cluster: str, sender_id: str | None) -> bool:
        principal = (sender_id or "").split(":", 1)[0]
        return principal in self.principals.get(cluster, frozenset())


def resolve_senders(configured: Mapping[str, tuple[str, ...]],
                    user_id: Callable[[str], str]) -> ClusterSenders:
    """Unique ids from the settings' entries: a unique id stays, a user ARN becomes its user's
    id through `user_id(user name)` (IAM GetUser at the edge)."""
    principals: dict[str, frozenset[str]] = {}
    for cluster, entries in configured.items():
        ids = set()
        for entry in entries:
            arn = USER_ARN.fullmatch(entry)
            ids.add(user_id(arn.group(1)) if arn else entry)
        principals[cluster] = frozenset(ids)
    return ClusterSenders(principals)


def is_sender_entry(entry: str) -> bool:
    """Whether a settings entry is an IAM user ARN or an IAM unique id."""
    return bool(USER_ARN.fullmatch(entry) or IAM_UNIQUE_ID.fullmatch(entry))
