"""SQS FIFO message group ids and deduplication ids, valid whatever the HDFS path.

SQS allows at most 128 characters for both ids, from alphanumerics and ASCII punctuation
(!"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~); no spaces, nothing outside ASCII. HDFS paths can be
longer and can hold anything but '/' and NUL in a component, so a path that does not fit is
shortened to a readable prefix plus a digest of the whole path.
"""

from __future__ import annotations

import hashlib
import re

MAX_ID_LENGTH = 128  # SQS limit for MessageGroupId and MessageDeduplicationId
SQS_ID = re.compile(r"[!-~]{1,128}")  # printable ASCII without space
_INVALID_CHAR = re.compile(r"[^!-~]")
_DIGEST_CHARS = 24  # 96 bits of blake2b: collisions only merge two groups, never lose order
CLUSTER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
# An IAM unique id (what SQS reports as SenderId, before ':' for a role session): a four-letter
# type prefix (AIDA user, AROA role) and upper-case letters and digits, 16-128 in all.
IAM_UNIQUE_ID = re.compile(r"A[A-Z]{3}[A-Z0-9]{12,124}")

GROUP_STRATEGIES = ("prefix:N", "parent", "path", "single")


def validate_cluster_name(name: str) -> str:
    """Cluster names appear in ids, S3 keys and DynamoDB keys: keep them to a safe set."""
    if not isinstance(name, str) or not CLUSTER_NAME.fullmatch(name):
        shown = repr(name) if len(repr(name)) <= 80 else repr(name)[:80] + "..."
        raise ValueError(
            f"cluster name {shown} is not valid: use 1-63 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return name


def sqs_safe_id(key: str) -> str:
    """`key` itself when SQS accepts it, else a readable prefix and a digest of the whole key."""
    if SQS_ID.fullmatch(key):
        return key
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    prefix = _INVALID_CHAR.sub("_", key)[: MAX_ID_LENGTH - _DIGEST_CHARS - 1]
    return f"{prefix}~{digest[:_DIGEST_CHARS]}"


def group_key(path: str, strategy: str) -> str:
    """The ordering domain of a path under a grouping strategy.

    - `prefix:N`: the first N path components (/user/alice for N=2): a dataset's tmp -> final
      rename stays ordered while datasets run in parallel. Paths shallower than N use all their
      components, so /user and /user/alice/x never share a group by accident of depth.
    - `parent`: the parent directory.
    - `path`: the path itself (per-file order only).
    - `single`: one group for the whole cluster (total order, one consumer at a time).
    """
    if strategy == "single":
        return "/"
    if strategy == "path":
        return path
    if strategy == "parent":
        parent = path.rsplit("/", 1)[0]
        return parent or "/"
    if strategy.startswith("prefix:"):
        depth = _prefix_depth(strategy)
        parts = path.split("/")  # "/a/b/c" -> ["", "a", "b", "c"]
        return "/".join(parts[: depth + 1]) or "/"
    raise ValueError(f"unknown group strategy {strategy!r}; use one of {GROUP_STRATEGIES}")


def _prefix_depth(strategy: str) -> int:
    try:
        depth = int(strategy.removeprefix("prefix:"))
    except ValueError:
        depth = 0
    if depth < 1:
        raise ValueError(f"group strategy {strategy!r}: N in prefix:N must be a whole number >= 1")
    return depth


def validate_group_strategy(strategy: str) -> str:
    group_key("/", strategy)  # raises ValueError naming the strategy
    return strategy


def message_group_id(cluster: str, path: str, strategy: str = "prefix:2") -> str:
    """MessageGroupId for an event: its cluster and the group key of its path."""
    return sqs_safe_id(f"{cluster}:{group_key(path, strategy)}")


def deduplication_id(
    cluster: str, first: tuple[int, int], last: tuple[int, int], count: int
) -> str:
    """MessageDeduplicationId of a message holding `count` events from `first` to `last`.

    Keys are (txid, index). A bare txid collides on OP_CONCAT_DELETE, whose events share one
    txid; (txid, index) at both ends does not, and re-sending the same events after a restart
    gives the same id. Cluster names are <= 63 characters and four int64s fit the rest.
    """
    return sqs_safe_id(f"{cluster}-{first[0]}.{first[1]}-{last[0]}.{last[1]}-{count}")


# Greedy from the start, so the last four numbers: a cluster name may hold '-', '.' and digits.
_DEDUPLICATION_RANGE = re.compile(r".+-(\d+)\.(\d+)-(\d+)\.(\d+)-\d+")


def deduplication_range(dedup_id: str) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The (txid, index) of the first and last event of the message `deduplication_id` named
    (a message holds its events in that order); None for an id of any other shape."""
    found = _DEDUPLICATION_RANGE.fullmatch(dedup_id)
    if found is None:
        return None
    t0, i0, t1, i1 = (int(g) for g in found.groups())
    return (t0, i0), (t1, i1)
