"""A small state file replaced atomically, for the agent's checkpoint and the audit tailer's
position: write a temp file beside it, fsync it, rename it over the old one, fsync the
directory. A crash at any point leaves the old or the new file, never a torn one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def replace_atomically(path: Path, text: str) -> None:
    """Writes `text` to `path` durably; raises OSError (the caller names the file's role)."""
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # makes the rename itself durable
    finally:
        os.close(dir_fd)
