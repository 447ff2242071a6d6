"""Local argument handling uses the names a Glue job run passes."""

from __future__ import annotations

import pytest

from glue_jobs import activity_rollups, compact_events
from glue_jobs.runtime import on_glue, resolve_args


def test_local_runs_take_glue_style_arguments_with_defaults():
    assert not on_glue()
    args = resolve_args(["--source", "file:///l", "--target", "file:///l", "--lookback_days", "2"],
                        compact_events.SPEC, prog="compact_events")
    assert args["source"] == "file:///l" and args["lookback_days"] == "2"
    assert args["compression"] == "zstd" and args["catalog_database"] == ""
    settings = compact_events.settings_from(args)
    assert settings.lookback_days == 2 and settings.target_file_bytes == 128 * 1_048_576


def test_a_missing_required_argument_is_named(capsys):
    with pytest.raises(SystemExit):
        resolve_args(["--source", "file:///l"], activity_rollups.SPEC, prog="activity_rollups")
    assert "--target" in capsys.readouterr().err


def test_a_bad_number_is_named():
    args = resolve_args(["--source", "a", "--target", "b", "--prefix_depth", "two"],
                        activity_rollups.SPEC, prog="activity_rollups")
    with pytest.raises(SystemExit, match="two"):
        activity_rollups.settings_from(args)
