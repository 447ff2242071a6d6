"""`hdfs-events copy submit`'s copy listing options: `--listing FILE` and `--listing-from-source`,
and their names before the rename (`--manifest`, `--manifest-from-listing`), which operators'
scripts still pass: they do the same, out of --help, with one line on stderr naming the new one."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from hdfs_events_cli.cli import main
from hdfs_events_cli.commands import copy

SOURCE = "s3://lake-bucket/exports/sales/"


def _dry_run(option: str, listing: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    code = main(["copy", "submit", "--queue-url", "unused", "--request-id", "r-1",
                 "--source", SOURCE, "--destination", "/data/imports/sales", "--dry-run",
                 option, str(listing)])
    assert code == 0
    out = capsys.readouterr()
    return out.out, out.err


def test_the_old_listing_option_sends_the_same_request_and_says_once_to_use_listing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    listing = tmp_path / "listing.json"
    listing.write_text(json.dumps([{"key": "exports/sales/part-0.parquet", "size": 12}]))

    new_out, new_err = _dry_run("--listing", listing, capsys)
    old_out, old_err = _dry_run("--manifest", listing, capsys)

    assert json.loads(new_out)["manifest"] == [{"key": "exports/sales/part-0.parquet", "size": 12}]
    assert old_out == new_out
    assert new_err == ""
    assert old_err == "hdfs-events copy submit: --manifest is deprecated, use --listing\n"


def test_the_old_list_the_source_option_asks_for_the_same_listing(
        capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="hdfs-events copy")
    copy.add_arguments(parser)
    base = ["submit", "--queue-url", "q", "--source", SOURCE, "--destination", "/d"]

    new = parser.parse_args([*base, "--listing-from-source"])
    assert capsys.readouterr().err == ""
    old = parser.parse_args([*base, "--manifest-from-listing"])

    assert old == new and new.listing_from_source is True and new.listing is None
    assert capsys.readouterr().err == ("hdfs-events copy submit: --manifest-from-listing is "
                                       "deprecated, use --listing-from-source\n")
    assert parser.parse_args(base).listing_from_source is False


def test_old_names_are_not_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["copy", "submit", "--help"])
    shown = capsys.readouterr().out
    assert "--listing FILE" in shown and "--listing-from-source" in shown
    assert "--manifest" not in shown
