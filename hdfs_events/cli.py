"""`hdfs-events`: the cloud-side CLI (reads the namespace index, submits copy requests, takes
drift alerts).

One module per subcommand under hdfs_events.commands, imported only when chosen. Each defines
`add_arguments(parser)` and `run(args) -> int`. AWS is reached through the standard chain
(AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL, ...), never through flags carrying secrets.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hdfs_events.subcommands import dispatch

COMMANDS: dict[str, tuple[str, str]] = {
    "index": ("hdfs_events.commands.index",
              "read the DynamoDB namespace index: `index ls /path`, `index stat /path`"),
    "copy": ("hdfs_events.commands.copy",
             "copy data from S3 back into HDFS: `copy submit ...`, `copy status REQUEST_ID`"),
    "quarantine": ("hdfs_events.commands.quarantine",
                   "reprocess quarantined messages after a fix: `quarantine redrive --dry-run`"),
    "who": ("hdfs_events.commands.who",
            "who changed a path, from the lake (Athena): `who /path --since 7d`"),
    "drift": ("hdfs_events.commands.drift",
              "the drift alerts `hdfs-events-agent verify` sent: `drift receive --queue-url URL`"),
}


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch("hdfs-events", "hdfs-events cloud-side tools.",
                    COMMANDS, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
