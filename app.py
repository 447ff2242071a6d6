#!/usr/bin/env python3
"""CDK entry point: `cdk synth -c env=prod` (through cdk.json) or `python app.py --env prod`.

Offline and credential-free: the stacks are environment-agnostic unless cdk.json pins an
account and region, and nothing is looked up at synth time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from aws_cdk import App

from stacks.assets import MissingAssetError
from stacks.product import compose
from stacks.settings import CONTEXT_ENV, SettingsError, load_settings

CDK_JSON = Path(__file__).resolve().with_name("cdk.json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", help="environment of cdk.json context (dev, prod, local)")
    parser.add_argument("--outdir", help="cloud assembly directory (default: cdk.out)")
    args = parser.parse_args(argv)

    # Under the CDK CLI the context arrives in CDK_CONTEXT_JSON and overrides this; run
    # plainly, cdk.json's context is read here so both ways see the same settings.
    context = json.loads(CDK_JSON.read_text())["context"]
    app = App(outdir=args.outdir, context=context,
              post_cli_context={CONTEXT_ENV: args.env} if args.env else None)
    try:
        settings = load_settings(app.node.get_all_context())
    except SettingsError as exc:
        print(f"app.py: {exc}", file=sys.stderr)
        return 2
    try:
        compose(app, settings)
    except MissingAssetError as exc:
        print(f"app.py: {exc}", file=sys.stderr)
        return 2
    app.synth()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
