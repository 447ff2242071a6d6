"""`hdfs-events`: the cloud-side CLI (reads the namespace index, submits copy requests).

One module per subcommand under hdfs_events.commands, imported only when chosen. Each defines
`add_arguments(parser)` and `run(args) -> int`. AWS is reached through the standard chain
(AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL, ...), never through flags carrying secrets.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMANDS: dict[str, tuple[str, str]] = {
    "index": ("hdfs_events.commands.index",
              "read the DynamoDB namespace index: `index ls /path`, `index stat /path`"),
    "copy": ("hdfs_events.commands.copy",
             "copy data from S3 back into HDFS: `copy submit ...`, `copy status REQUEST_ID`"),
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="hdfs-events",
                                     description="hdfs-events cloud-side tools.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    if not argv or argv[0] not in COMMANDS:
        parser.parse_args(argv)
        return 2
    name = argv[0]
    module = importlib.import_module(COMMANDS[name][0])
    command_parser = argparse.ArgumentParser(prog=f"hdfs-events {name}",
                                             description=COMMANDS[name][1])
    module.add_arguments(command_parser)
    args = command_parser.parse_args(argv[1:])
    return int(module.run(args))


if __name__ == "__main__":
    raise SystemExit(main())
