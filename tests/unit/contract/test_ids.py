"""SQS FIFO ids: valid for any path, distinct for distinct ranges, stable across processes."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdfs_events.ids import (
    GROUP_STRATEGIES,
    deduplication_id,
    group_key,
    message_group_id,
    sqs_safe_id,
    validate_cluster_name,
)

SQS_ID = re.compile(r"[!-~]{1,128}")  # SQS: 1-128 of alphanumerics and ASCII punctuation
clusters = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}", fullmatch=True)
any_text = st.text(max_size=600)  # lone surrogates, controls, spaces, quotes, non-ASCII
awkward = st.sampled_from(['/a b/"quoted"/\'x\'', "/ü/日本/😀", "/tab\there/\x00nul", "/" * 300,
                           "/data/" + "x" * 1000, "", "/", "//", "/a/../b"])
paths = any_text | awkward | st.lists(any_text, max_size=8).map("/".join)
strategies = st.sampled_from(["single", "path", "parent", "prefix:1", "prefix:2", "prefix:3",
                              "prefix:17"])
ranges = st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**31)).map(tuple)


@settings(max_examples=500)
@given(clusters, paths, strategies)
def test_any_path_under_any_strategy_gives_a_valid_group_id(cluster: str, path: str,
                                                           strategy: str) -> None:
    gid = message_group_id(cluster, path, strategy)
    assert SQS_ID.fullmatch(gid), gid
    assert gid == message_group_id(cluster, path, strategy)


@given(paths)
def test_readable_keys_are_kept_and_unreadable_ones_differ_by_digest(path: str) -> None:
    key = f"c1:{path}"
    safe = sqs_safe_id(key)
    if SQS_ID.fullmatch(key):
        assert safe == key
    else:
        assert SQS_ID.fullmatch(safe)
        assert safe != sqs_safe_id(key + "x")


@settings(max_examples=300)
@given(clusters, st.lists(st.tuples(ranges, ranges, st.integers(1, 10**6)), min_size=2,
                          max_size=20, unique=True))
def test_distinct_ranges_give_distinct_dedup_ids(cluster: str, msgs: list) -> None:
    ids = [deduplication_id(cluster, first, last, count) for first, last, count in msgs]
    assert len(set(ids)) == len(ids)
    assert all(SQS_ID.fullmatch(i) for i in ids)


@given(st.lists(clusters, min_size=2, max_size=5, unique=True), ranges, ranges)
def test_the_same_range_in_two_clusters_gives_two_ids(cs: list[str], first: tuple,
                                                      last: tuple) -> None:
    assert len({deduplication_id(c, first, last, 1) for c in cs}) == len(cs)


def test_concat_delete_events_sharing_a_txid_get_different_ids() -> None:
    # The bare-txid scheme of hdfs-inotify-example collides here: four events of txid 57.
    ids = {deduplication_id("c1", (57, i), (57, i), 1) for i in range(4)}
    assert len(ids) == 4


def test_ids_are_stable_across_processes() -> None:
    # No Python hash(): PYTHONHASHSEED differs per process, ids must not.
    code = ("from hdfs_events.ids import message_group_id as g, deduplication_id as d;"
            "print(g('c1', '/ü/' + 'x'*300, 'path'), g('c1', '/a b/c', 'prefix:2'),"
            " d('c1', (1, 0), (9, 3), 12))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={"PYTHONHASHSEED": seed}).stdout
            for seed in ("1", "2", "random")}
    assert len(outs) == 1
    here = " ".join([message_group_id("c1", "/ü/" + "x" * 300, "path"),
                     message_group_id("c1", "/a b/c", "prefix:2"),
                     deduplication_id("c1", (1, 0), (9, 3), 12)])
    assert outs.pop().strip() == here


@pytest.mark.parametrize(("path", "strategy", "key"), [
    ("/user/alice/x/y", "prefix:2", "/user/alice"), ("/user", "prefix:2", "/user"),
    ("/", "prefix:2", "/"), ("/a/b/c", "parent", "/a/b"), ("/a", "parent", "/"),
    ("/a/b", "path", "/a/b"), ("/a/b", "single", "/"),
])
def test_group_keys(path: str, strategy: str, key: str) -> None:
    assert group_key(path, strategy) == key


@pytest.mark.parametrize("strategy", ["prefix:0", "prefix:x", "prefix:", "dir", ""])
def test_unknown_strategies_are_refused_by_name(strategy: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(strategy))):
        group_key("/a", strategy)
    assert GROUP_STRATEGIES


@pytest.mark.parametrize("name", ["", "a b", "-x", "x" * 64, "é", "a/b", "a:b"])
def test_cluster_names_outside_the_safe_set_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="cluster name"):
        validate_cluster_name(name)
