"""The agent's dispatch: one module per subcommand, imported only when chosen (so `translate`
starts without boto3 and only `run` pays for a JVM). A subcommand module defines
`add_arguments(parser)` and `run(args) -> int` (the exit code)."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Mapping, Sequence

# name -> (module, one-line help)
Commands = Mapping[str, tuple[str, str]]


def dispatch(prog: str, description: str, commands: Commands, argv: Sequence[str]) -> int:
    argv = list(argv)
    parser = argparse.ArgumentParser(prog=prog, description=description)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, help_text) in commands.items():
        sub.add_parser(name, help=help_text, add_help=False)
    if not argv or argv[0] not in commands:
        parser.parse_args(argv)  # prints usage or the unknown-command error, exits 2
        return 2
    name = argv[0]
    module = importlib.import_module(commands[name][0])
    command_parser = argparse.ArgumentParser(prog=f"{prog} {name}", description=commands[name][1])
    module.add_arguments(command_parser)
    return int(module.run(command_parser.parse_args(argv[1:])))
