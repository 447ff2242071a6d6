"""Planning and verification: the trusted index decides what is copied and what must be there."""

from __future__ import annotations

import re

import pytest

from hdfs_events.copy_request import make_request
from onprem_agent.copy_worker.failures import CopyFailed, Rejected
from onprem_agent.copy_worker.plan import filter_lines, java_quote, make_plan, verify
from onprem_agent.copy_worker.worker import retry_delay

P = "exports/run-7/"
SOURCE = {P + "part-0": 10, P + "sub/part-1": 20, P + "_SUCCESS": 0}


def request(mode: str = "update", copy_listing: list | None = None):  # type: ignore[no-untyped-def]
    return make_request(request_id="r", source=f"s3://lake/{P}", destination="/data/imports/r",
                        mode=mode, copy_listing=copy_listing)


def test_without_manifest_everything_under_a_finished_prefix_is_expected() -> None:
    plan = make_plan(request(), SOURCE, None, max_bytes=100)
    assert plan.expected == {"part-0": 10, "sub/part-1": 20, "_SUCCESS": 0}
    assert plan.to_copy == plan.expected
    assert plan.excluded_keys == ()
    assert plan.bytes_to_copy == 30


def test_without_manifest_an_unfinished_prefix_is_retried_later() -> None:
    unfinished = {k: v for k, v in SOURCE.items() if not k.endswith("_SUCCESS")}
    with pytest.raises(CopyFailed, match="_SUCCESS"):
        make_plan(request(), unfinished, None, max_bytes=100)


def test_manifest_selects_and_excludes_the_rest() -> None:
    plan = make_plan(request(copy_listing=[{"key": P + "part-0", "size": 10}]),
                     {**SOURCE, P + "_temporary/x": 5}, None, max_bytes=100)
    assert plan.expected == {"part-0": 10}
    assert set(plan.excluded_keys) == {P + "sub/part-1", P + "_SUCCESS", P + "_temporary/x"}


@pytest.mark.parametrize(("entry", "reason"), [
    ({"key": P + "part-0", "size": 11}, "manifest says 11"),
    ({"key": P + "part-9", "size": 1}, "does not exist"),
])
def test_manifest_that_lies_is_rejected_before_anything_runs(entry: dict, reason: str) -> None:
    with pytest.raises(Rejected, match=reason):
        make_plan(request(copy_listing=[entry]), SOURCE, None, max_bytes=100)


def test_too_many_bytes_is_rejected() -> None:
    with pytest.raises(Rejected, match="max_bytes"):
        make_plan(request(), SOURCE, None, max_bytes=29)


def test_source_object_with_an_unsafe_name_is_rejected() -> None:
    with pytest.raises(Rejected, match="cannot be copied"):
        make_plan(request(), {**SOURCE, P + "evil\nname": 1}, None, max_bytes=100)


def test_skip_existing_excludes_files_already_there_and_keeps_their_size_unchecked() -> None:
    plan = make_plan(request("skip-existing"), SOURCE, {"part-0": 999}, max_bytes=100)
    assert plan.to_copy == {"sub/part-1": 20, "_SUCCESS": 0}
    assert plan.excluded_keys == (P + "part-0",)
    assert verify(plan, {"part-0": 999, "sub/part-1": 20, "_SUCCESS": 0}) == []


def test_update_ignores_what_is_at_the_destination_when_planning() -> None:
    plan = make_plan(request("update"), SOURCE, {"part-0": 999}, max_bytes=100)
    assert plan.excluded_keys == ()


def test_verify_names_missing_and_wrong_sized_files_and_ignores_extras() -> None:
    plan = make_plan(request(), SOURCE, None, max_bytes=100)
    assert verify(plan, {"part-0": 10, "sub/part-1": 20, "_SUCCESS": 0, "old": 5}) == []
    assert verify(plan, {"part-0": 9, "_SUCCESS": 0}) == [
        "'part-0' is 9 bytes, expected 10", "'sub/part-1' missing"]
    assert verify(plan, None) == ["destination does not exist after the copy"]


def java_to_python(pattern: str) -> re.Pattern[str]:
    """Java's \\Q...\\E literal quoting as Python's re.escape (the rest is common syntax)."""
    out, rest = [], pattern
    while "\\Q" in rest:
        head, _, tail = rest.partition("\\Q")
        quoted, _, rest = tail.partition("\\E")
        out += [head, re.escape(quoted)]
    return re.compile("".join([*out, rest]))


def test_filter_lines_match_exactly_the_excluded_source_paths() -> None:
    [line] = filter_lines("lake", ("exports/run-7/a.b+(c) d",))
    pattern = java_to_python(line)
    assert pattern.fullmatch("s3a://lake/exports/run-7/a.b+(c) d")
    assert not pattern.fullmatch("s3a://lake/exports/run-7/aXb+(c) d")
    assert not pattern.fullmatch("s3a://lake/exports/run-7/a.b+(c) d/more")


def test_java_quote_splits_an_embedded_end_marker() -> None:
    assert java_quote("a\\Eb") == "\\Qa\\E\\\\E\\Qb\\E"


@pytest.mark.parametrize(("receipt", "delay"), [(1, 30), (2, 60), (3, 120), (7, 1920), (8, 3600),
                                                (200, 3600)])
def test_retry_delay_doubles_up_to_the_cap(receipt: int, delay: int) -> None:
    assert retry_delay(receipt, 30, 3600) == delay
