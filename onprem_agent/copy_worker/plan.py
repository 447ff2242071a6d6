"""What to copy and how to tell it worked: pure functions of the request and two listings.

The expected destination content comes from a trusted index: the request's copy listing (its
`manifest` field; checked against S3 first, so a listing that lies about a size is refused
before anything runs) or, when there is none, the S3 listing of a prefix that holds a
`_SUCCESS` marker. After distcp, the destination listing must hold every expected name with the
expected size.

distcp copies whole directories; files it must leave alone (not in the copy listing, or already at
the destination under skip-existing) go into a `-filters` file: one Java regex per line, matched
with Pattern.matches() against each source path (org.apache.hadoop.tools.RegexCopyFilter).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hdfs_events.copy_request import (
    SUCCESS_MARKER,
    CopyMode,
    CopyRequest,
    CopyRequestError,
    check_key,
)
from onprem_agent.copy_worker.failures import CopyFailed, Rejected

_MAX_PROBLEMS_SHOWN = 5


@dataclass(frozen=True, slots=True)
class CopyPlan:
    expected: Mapping[str, int]  # relative name -> size the destination must hold
    to_copy: Mapping[str, int]  # relative name -> size distcp is to copy this time
    excluded_keys: tuple[str, ...]  # full S3 keys distcp must skip
    kept: frozenset[str]  # names already at the destination (skip-existing): sizes not compared

    @property
    def bytes_to_copy(self) -> int:
        return sum(self.to_copy.values())


def make_plan(request: CopyRequest, source_objects: Mapping[str, int],
              existing: Mapping[str, int] | None, *, max_bytes: int) -> CopyPlan:
    """`source_objects`: the S3 listing by full key; `existing`: the destination listing before
    the copy (only consulted for skip-existing). Raises Rejected or CopyFailed."""
    prefix = request.source.prefix
    for key in source_objects:
        try:
            check_key(key, "source object")
        except CopyRequestError as exc:
            raise Rejected(f"source: object {key[:200]!r} cannot be copied to HDFS: "
                           f"{exc.reason}") from None
    if request.copy_listing is not None:
        selected: dict[str, int] = {}
        for entry in request.copy_listing:
            actual = source_objects.get(entry.key)
            if actual is None:
                raise Rejected(f"manifest: {entry.key!r} does not exist in s3://"
                               f"{request.source.bucket}/")
            if actual != entry.size:
                raise Rejected(f"manifest: {entry.key!r} is {actual} bytes in S3, the manifest "
                               f"says {entry.size}")
            selected[entry.key] = entry.size
    else:
        if prefix + SUCCESS_MARKER not in source_objects:
            raise CopyFailed(f"source: no {SUCCESS_MARKER} marker in {request.source.uri} yet "
                             "(the producing job has not finished, or send a manifest)")
        selected = dict(source_objects)
    if not selected:
        raise Rejected(f"source: nothing to copy in {request.source.uri}")
    total = sum(selected.values())
    if total > max_bytes:
        raise Rejected(f"source: {total} bytes to copy; this worker copies at most {max_bytes} "
                       "(max_bytes)")
    excluded = [key for key in source_objects if key not in selected]
    expected = {key[len(prefix):]: size for key, size in selected.items()}
    kept: set[str] = set()
    if request.mode is CopyMode.SKIP_EXISTING and existing:
        kept = {name for name in expected if name in existing}
        excluded.extend(prefix + name for name in kept)
    to_copy = {name: size for name, size in expected.items() if name not in kept}
    return CopyPlan(expected=expected, to_copy=to_copy, excluded_keys=tuple(sorted(excluded)),
                    kept=frozenset(kept))


def verify(plan: CopyPlan, destination: Mapping[str, int] | None) -> list[str]:
    """Problems found comparing the destination listing with the plan; empty when it matches.

    Extra files at the destination are not problems: update and skip-existing keep what was
    there, and distcp never deletes without -delete.
    """
    if destination is None:
        return ["destination does not exist after the copy"]
    problems = []
    for name, size in sorted(plan.expected.items()):
        actual = destination.get(name)
        if actual is None:
            problems.append(f"{name!r} missing")
        elif name not in plan.kept and actual != size:
            problems.append(f"{name!r} is {actual} bytes, expected {size}")
    return problems


def describe_problems(problems: list[str]) -> str:
    shown = "; ".join(problems[:_MAX_PROBLEMS_SHOWN])
    more = len(problems) - _MAX_PROBLEMS_SHOWN
    return shown + (f"; and {more} more" if more > 0 else "")


def filter_lines(bucket: str, keys: tuple[str, ...]) -> list[str]:
    """distcp -filters patterns that exclude exactly these objects, whatever the scheme
    (s3a://bucket/key is how Hadoop prints the source path)."""
    return [f"[A-Za-z0-9]+://{java_quote(f'{bucket}/{key}')}" for key in keys]


def java_quote(text: str) -> str:
    """java.util.regex.Pattern.quote: \\Q...\\E, with any \\E inside split out."""
    return "\\Q" + text.replace("\\E", "\\E\\\\E\\Q") + "\\E"
