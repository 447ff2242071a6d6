"""Where the tailer stands: the log file (by identity) and the byte offset of its next unshipped
line. Saved only after the object holding the lines before it was written, so a crash re-sends
at most the last object (to the same key: hdfs_events.names.audit_object_key).

The file is replaced atomically (write, fsync, rename), as onprem_agent/checkpoint.py does.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path


class PositionError(RuntimeError):
    """A position file that cannot be read or written; the message names the file."""


@dataclass(frozen=True, slots=True)
class TailPosition:
    file_id: str
    offset: int


def load_position(path: Path) -> TailPosition | None:
    try:
        doc = json.loads(path.read_text())
        return TailPosition(file_id=str(doc["file_id"]), offset=int(doc["offset"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PositionError(f"{path}: not an audit position file ({exc}); move it away to "
                            "start from the oldest audit file") from None


def save_position(path: Path, position: TailPosition) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump({"file_id": position.file_id, "offset": position.offset}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise PositionError(f"{path}: cannot save the audit position: {exc}") from exc
