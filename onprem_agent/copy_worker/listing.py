"""Listings the copy is planned and verified against: names and sizes, nothing else.

Source: S3 ListObjectsV2 through boto3 (bounded by max_objects, so a prefix with millions of
keys is refused before it fills memory).

Destination: `hadoop fs -ls -R PATH` through the configured command list (the same `hadoop`
that runs distcp, so the listing sees the cluster exactly as distcp wrote it: same
fs.defaultFS, Kerberos ticket and client config). Chosen over the Hadoop FileSystem client in a
JVM because the worker then needs no JVM of its own and no Hadoop jars that match the cluster's
version; the cost is one client start (a few seconds) per verification, small beside a distcp
job. The interface is two methods, so a JVM-backed lister can replace it.

DistCp's temporaries: without -direct, DistCp writes each file as
`<dir>/.distcp.tmp.<task attempt>.<millis>` and renames it to its name only once complete
(RetriableFileCopyCommand), so a file under its final name is always whole. A failing copy
deletes its temporary; a SIGKILLed one (a host going down) leaves it behind, partial.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from botocore.exceptions import ClientError

from hdfs_events.copy_request import S3Location
from onprem_agent.copy_worker.failures import CopyFailed, Rejected

Listing = dict[str, int]  # name relative to the listed directory -> size in bytes

DISTCP_TEMPORARY_PREFIX = ".distcp.tmp."
_REMOVE_BATCH = 100  # paths per `hadoop fs -rm`: one client start each, argv stays short


class DestinationLister(Protocol):
    def list(self, path: str) -> Listing | None:
        """Files below `path` (recursively) by relative name; None when `path` does not exist.
        Raises CopyFailed when the listing itself fails."""
        ...

    def remove(self, root: str, names: Sequence[str]) -> None:
        """Deletes these files (names relative to `root`); raises CopyFailed when it cannot."""
        ...


def distcp_temporaries(listing: Listing | None) -> list[str]:
    """Names of DistCp temporaries (partial files of a killed copy) in a listing."""
    return sorted(name for name in listing or ()
                  if name.rsplit("/", 1)[-1].startswith(DISTCP_TEMPORARY_PREFIX))


def list_s3(s3: Any, location: S3Location, max_objects: int) -> Listing:
    """Objects below the prefix, by full key. Directory markers (keys ending in '/') are left
    out: distcp turns them into directories, not files."""
    objects: Listing = {}
    paginator = s3.get_paginator("list_objects_v2")
    try:
        for page in paginator.paginate(Bucket=location.bucket, Prefix=location.prefix):
            for obj in page.get("Contents", ()):
                key = obj["Key"]
                if key.endswith("/"):
                    continue
                objects[key] = int(obj["Size"])
                if len(objects) > max_objects:
                    raise Rejected(f"source: more than {max_objects} objects under "
                                   f"{location.uri} (max_objects)")
    except s3.exceptions.NoSuchBucket:
        raise CopyFailed(f"source: bucket {location.bucket!r} does not exist") from None
    except ClientError as exc:
        raise CopyFailed(f"source: listing {location.uri} failed: {exc}") from exc
    return objects


Runner = Callable[..., subprocess.CompletedProcess[str]]


class HadoopShellLister:
    """Lists with `<list_command> PATH`, by default `hadoop fs -ls -R PATH`; removes with
    `<remove_command> PATH...`, by default `hadoop fs -rm -f -skipTrash PATH...`."""

    def __init__(self, command: Sequence[str], *,
                 remove_command: Sequence[str] = ("hadoop", "fs", "-rm", "-f", "-skipTrash"),
                 timeout_s: float = 600, run: Runner = subprocess.run) -> None:
        self._command = list(command)
        self._remove_command = list(remove_command)
        self._timeout_s = timeout_s
        self._run = run

    def list(self, path: str) -> Listing | None:
        argv = [*self._command, path]
        try:
            done = self._run(argv, capture_output=True, text=True, errors="surrogateescape",
                             timeout=self._timeout_s, check=False)
        except FileNotFoundError:
            raise CopyFailed(f"listing: command {self._command[0]!r} not found") from None
        except subprocess.TimeoutExpired:
            raise CopyFailed(f"listing: {path} took longer than {self._timeout_s} s") from None
        if done.returncode != 0:
            if "No such file or directory" in done.stderr:
                return None
            raise CopyFailed(f"listing: {' '.join(argv[:-1])} exited {done.returncode}: "
                             f"{_last_line(done.stderr)}")
        return parse_ls_recursive(done.stdout, path)

    def remove(self, root: str, names: Sequence[str]) -> None:
        paths = [root.rstrip("/") + "/" + name for name in names]
        for start in range(0, len(paths), _REMOVE_BATCH):
            argv = [*self._remove_command, *paths[start:start + _REMOVE_BATCH]]
            try:
                done = self._run(argv, capture_output=True, text=True,
                                 errors="surrogateescape", timeout=self._timeout_s, check=False)
            except FileNotFoundError:
                raise CopyFailed(f"removing: command {argv[0]!r} not found") from None
            except subprocess.TimeoutExpired:
                raise CopyFailed(f"removing: took longer than {self._timeout_s} s") from None
            if done.returncode != 0:
                raise CopyFailed(f"removing: {' '.join(self._remove_command)} exited "
                                 f"{done.returncode}: {_last_line(done.stderr)}")


def parse_ls_recursive(text: str, root: str) -> Listing:
    """Files from `hadoop fs -ls -R` output, by name relative to `root`.

    Lines look like
        -rw-r--r--   3 etl hadoop   1048576 2026-11-20 10:15 /data/imports/x/part-0
        drwxr-xr-x   - etl hadoop         0 2026-11-20 10:15 /data/imports/x/sub
    (FsShell's Ls: permissions with an optional '+' for ACLs, replication or '-', owner, group,
    length, date, time, path). The path is the rest of the line, so names with spaces survive.
    """
    files: Listing = {}
    prefix = root.rstrip("/") + "/"
    for line in text.splitlines():
        fields = line.split(None, 7)
        if len(fields) != 8 or fields[0][:1] not in ("-", "d", "l"):
            continue  # "Found N items" headers, warnings the client prints on stdout
        if fields[0].startswith("d"):
            continue
        try:
            size = int(fields[4])
        except ValueError:
            continue
        path = _strip_authority(fields[7])
        if path.startswith(prefix):
            files[path[len(prefix):]] = size
    return files


def _strip_authority(path: str) -> str:
    """"/a/b" from "hdfs://nameservice1/a/b" (the client prints qualified paths when asked
    about qualified ones)."""
    if "://" in path:
        rest = path.split("://", 1)[1]
        return "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    return path


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:500] if lines else "(no output)"
