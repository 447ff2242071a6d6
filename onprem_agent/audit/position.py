"""Where the tailer stands: the log file (by identity) and the byte offset of its next unshipped
line. Saved only after the object holding the lines before it was written, so a crash re-sends
at most the last object (to the same key: hdfs_events.lake_layout.audit_object_key).

The file is replaced atomically (onprem_agent.atomic_file), as the agent's checkpoint is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from onprem_agent.atomic_file import replace_atomically


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
    try:
        replace_atomically(path, json.dumps({"file_id": position.file_id,
                                             "offset": position.offset}))
    except OSError as exc:
        raise PositionError(f"{path}: cannot save the audit position: {exc}") from exc
