"""Runs distcp: an argument list handed to the kernel, never a string handed to a shell.

Request values reach distcp only as whole argv entries, after validation, so `; rm -rf /` in a
path is a (refused) path, not a command. The source is an s3a:// URI and the destination
starts with '/', so neither can be taken for an option. Credentials never appear here: S3A
reads them from the environment the worker inherits or from a Hadoop credential provider.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from hdfs_events.copy_request import CopyMode
from onprem_agent.copy_worker.failures import CopyFailed

_OUTPUT_LINES_KEPT = 20
_KILL_GRACE_S = 10


def distcp_argv(command: Sequence[str], mode: CopyMode, source_uri: str, destination: str,
                filters_file: Path | None = None) -> list[str]:
    """-update or -overwrite in every mode: with either, distcp copies the *contents* of the
    source into the destination whether or not it exists; without, an existing destination gets
    the source directory nested inside it (a classic distcp surprise). skip-existing is -update
    plus filters naming the files already there."""
    options = ["-overwrite"] if mode is CopyMode.OVERWRITE else ["-update"]
    if filters_file is not None:
        options += ["-filters", str(filters_file)]
    return [*command, *options, source_uri, destination]


class DistcpRunner:
    """Runs one command to completion or until `timeout_s`, then kills its process group."""

    def __init__(self, *, timeout_s: float) -> None:
        self._timeout_s = timeout_s

    def __call__(self, argv: Sequence[str]) -> str:
        """Returns the tail of the output; raises CopyFailed on a non-zero exit or timeout."""
        tail: collections.deque[str] = collections.deque(maxlen=_OUTPUT_LINES_KEPT)
        try:
            # A session of its own: `hadoop` is a script that starts a JVM, and a timeout must
            # stop the whole tree, not orphan the JVM.
            proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, errors="replace", start_new_session=True)
        except FileNotFoundError:
            raise CopyFailed(f"distcp: command {argv[0]!r} not found") from None
        except PermissionError:
            raise CopyFailed(f"distcp: command {argv[0]!r} is not executable") from None
        reader = threading.Thread(target=_drain, args=(proc, tail), daemon=True)
        reader.start()
        try:
            code = proc.wait(timeout=self._timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            reader.join(timeout=5)
            raise CopyFailed(f"distcp: still running after {self._timeout_s:g} s; stopped "
                             f"(last output: {_last(tail)})") from None
        reader.join(timeout=5)
        if code != 0:
            raise CopyFailed(f"distcp: exited with {_describe(code)}: {_last(tail)}")
        return "\n".join(tail)


def _drain(proc: subprocess.Popen[str], tail: collections.deque[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        # A Java stack trace's frames ("\tat ...", "... 3 more") say where, not what; kept,
        # they would push the exception's own line out of the tail.
        if not line.lstrip().startswith(("at ", "... ")):
            tail.append(line.rstrip("\n")[:1000])


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=_KILL_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    except ProcessLookupError:
        proc.wait()


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"


def _last(tail: collections.deque[str]) -> str:
    lines = [line for line in tail if line.strip()]
    return " | ".join(lines[-3:])[:1000] if lines else "(no output)"
