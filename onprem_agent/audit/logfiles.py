"""The audit log as log4j's RollingFileAppender leaves it: the live file `name` and its rotated
copies `name.1` (newest) ... `name.N` (oldest). A rollover closes the live file and renames each
copy one number up (the oldest past MaxBackupIndex is deleted), then opens a new live file.

A file is known by its identity, not its name: the inode and a fingerprint of its first line
(complete and never rewritten once written; the inode alone may be reused after log4j deletes
the oldest copy). `AuditTailer` reads whole lines from where the position says, to the end of
that file, then the newer files in order, then the live file as it grows. A line is read only
once it ends with a newline, except at the end of a rotated file, which never grows again.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from onprem_agent.audit.position import TailPosition

log = logging.getLogger(__name__)

# The first line of a NameNode's audit log is a few hundred bytes; a longer one is still
# identified by its first 4 KiB.
_FINGERPRINT_BYTES = 4096


@dataclass(frozen=True, slots=True)
class Chunk:
    """Lines of one file: (offset of the line's first byte, the line without its newline)."""
    file_id: str
    lines: list[tuple[int, bytes]]
    end: int  # the offset after the last line: where the next read of this file starts


class RotatingLog:
    """The files of one rotating log, oldest first."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory, self.name = directory, name
        self._rotated = re.compile(re.escape(name) + r"\.(\d+)")

    @property
    def live(self) -> Path:
        return self.directory / self.name

    def files(self) -> list[Path]:
        numbered = []
        try:
            entries = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        for entry in entries:
            m = self._rotated.fullmatch(entry)
            if m:
                numbered.append((int(m.group(1)), self.directory / entry))
        ordered = [p for _, p in sorted(numbered, reverse=True)]
        return ordered + ([self.live] if self.live.exists() else [])


def file_id(f: BinaryIO) -> str | None:
    """`<inode>-<first line digest>`, or None while the file holds no complete line."""
    f.seek(0)
    head = f.read(_FINGERPRINT_BYTES)
    end = head.find(b"\n")
    if end < 0 and len(head) < _FINGERPRINT_BYTES:
        return None
    first = head if end < 0 else head[:end + 1]
    digest = hashlib.sha256(first).hexdigest()[:16]
    return f"{os.fstat(f.fileno()).st_ino}-{digest}"


class _OpenFile:
    def __init__(self, path: Path, f: BinaryIO, ident: str, offset: int) -> None:
        self.path, self.f, self.id, self.offset = path, f, ident, offset
        st = os.fstat(f.fileno())
        self.inode = (st.st_dev, st.st_ino)


class AuditTailer:
    """Reads the audit log in order from `position` (None: from the oldest file there is)."""

    def __init__(self, log_files: RotatingLog, position: TailPosition | None) -> None:
        self._log = log_files
        self._start = position
        self._current: _OpenFile | None = None

    @property
    def position(self) -> TailPosition | None:
        """Where the next read starts."""
        if self._current is None:
            return self._start
        return TailPosition(self._current.id, self._current.offset)

    def close(self) -> None:
        if self._current is not None:
            self._current.f.close()
            self._current = None

    def read(self, max_lines: int) -> Chunk | None:
        """Up to max_lines lines of one file, or None when nothing new is complete."""
        if self._current is None and not self._open_start():
            return None
        while True:
            current = self._current
            assert current is not None
            rotated = self._is_rotated(current)
            lines = self._lines(current, max_lines, final=rotated)
            if lines:
                return Chunk(current.id, lines, current.offset)
            if not rotated or not self._open_next(current):
                return None

    def _lines(self, current: _OpenFile, max_lines: int, *, final: bool) -> list[tuple[int, bytes]]:
        f, offset, out = current.f, current.offset, []
        f.seek(offset)
        while len(out) < max_lines:
            line = f.readline()
            if not line:
                break
            if not line.endswith(b"\n"):
                if not final:
                    break  # log4j is still writing it
                out.append((offset, line))
                offset += len(line)
                break
            out.append((offset, line[:-1]))
            offset += len(line)
        current.offset = offset
        return out

    def _is_rotated(self, current: _OpenFile) -> bool:
        """True once the live name is another file: ours is a rotated copy and grows no more."""
        try:
            st = os.stat(self._log.live)
        except FileNotFoundError:
            return False  # between log4j's rename and its new file: not yet known
        return (st.st_dev, st.st_ino) != current.inode

    def _open_next(self, current: _OpenFile) -> bool:
        """Moves to the file after `current` in rotation order; False when there is none yet."""
        files = self._log.files()
        index = next((i for i, p in enumerate(files) if _inode(p) == current.inode), None)
        newer = files if index is None else files[index + 1:]
        for path in newer:
            opened = _open(path)
            if opened is not None:
                current.f.close()
                self._current = _OpenFile(path, opened[0], opened[1], 0)
                return True
        return False

    def _open_start(self) -> bool:
        """Finds the position's file (newest first: it is usually the live one or .1)."""
        files = self._log.files()
        candidates: list[tuple[Path, BinaryIO, str]] = []
        found = None
        for path in reversed(files):
            opened = _open(path)
            if opened is None:
                continue
            candidates.append((path, *opened))
            if self._start is not None and opened[1] == self._start.file_id:
                found = candidates[-1]
                break
        if not candidates:
            return False
        offset = 0
        if found is None:
            if self._start is not None:
                log.warning("audit file %s is no longer in %s (deleted by log4j past its "
                            "MaxBackupIndex?): its lines after offset %d are lost; going on from "
                            "the oldest file there is", self._start.file_id, self._log.directory,
                            self._start.offset)
            found = candidates[-1]  # the oldest
        else:
            offset = self._start.offset if self._start is not None else 0
        for _, f, _ in candidates:
            if f is not found[1]:
                f.close()
        self._current = _OpenFile(found[0], found[1], found[2], offset)
        return True


def _open(path: Path) -> tuple[BinaryIO, str] | None:
    try:
        f = path.open("rb")
    except FileNotFoundError:
        return None  # renamed or deleted since the listing
    ident = file_id(f)
    if ident is None:
        f.close()
        return None
    return f, ident


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)
