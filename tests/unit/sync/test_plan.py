"""The planner against a plain-dict model of HDFS and S3: whatever the workload and however the
events fall into windows, and however far HDFS has moved on when a window runs, the S3 copy
ends equal to HDFS's closed covered files; and the merge rules hold their promises on the
counts a user pays for (a temp-then-rename file is uploaded once)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hdfs_events.event import EventType, HdfsEvent
from onprem_agent.sync.plan import (
    FileState,
    Kill,
    Move,
    Scope,
    backward,
    bytes_to_copy,
    forward,
    plan_window,
    reconcile,
    resolve,
)
from tests.unit.sync.model import ModelHdfs, ModelS3, list_dir

COVERED = Scope.of(["/c"], [r"\.tmp$"])
DIRS = ["/c", "/c/d1", "/c/d2", "/out"]
NAMES = ["a", "b", "x.tmp"]
PATHS = [f"{d}/{n}" for d in DIRS for n in NAMES] + DIRS


def run(hdfs: ModelHdfs, op: tuple) -> None:
    name, *args = op
    getattr(hdfs, name)(*args)


OPS = ("create", "create", "close", "append", "truncate", "rename", "rename", "delete",
       "chmod", "touch", "sync", "sync")


def draw_op(data: st.DataObject, hdfs: ModelHdfs) -> tuple:
    """An operation on what exists more often than not (else few renames would succeed)."""
    existing = sorted(hdfs.files) + sorted(hdfs.dirs - {"/"})
    path = st.sampled_from(existing + PATHS) if existing else st.sampled_from(PATHS)
    name = data.draw(st.sampled_from(OPS))
    if name == "create":
        return name, data.draw(path), data.draw(st.booleans()), data.draw(st.booleans())
    if name == "append":
        return name, data.draw(path), data.draw(st.booleans())
    if name == "rename":
        return name, data.draw(path), data.draw(st.sampled_from(PATHS)), data.draw(st.booleans())
    if name == "chmod":
        return name, data.draw(path), data.draw(st.sampled_from(["0600", "0640", "0755"]))
    if name == "sync":
        return (name,)
    return name, data.draw(path)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_s3_copy_ends_equal_to_hdfs_whatever_the_windows_and_the_lag(data):
    """A window ends at a random event; it runs later, with HDFS possibly ahead of it."""
    hdfs, s3 = ModelHdfs(), ModelS3()
    for d in ("/c/d1", "/out"):
        hdfs.mkdirs(d)
    done = cut = 0

    def sync_up_to(end: int) -> None:
        nonlocal done
        if end > done:
            s3.run_window(s3.plan(hdfs.events[done:end], COVERED), hdfs, COVERED)
            done = end

    for _ in range(data.draw(st.integers(0, 40))):
        o = draw_op(data, hdfs)
        if o[0] == "sync":
            sync_up_to(cut)
            cut = len(hdfs.events) if data.draw(st.booleans()) else cut
        else:
            run(hdfs, o)
            if data.draw(st.booleans()):
                cut = len(hdfs.events)
    hdfs.close_all()
    sync_up_to(len(hdfs.events))
    assert s3.objects == hdfs.closed_files(COVERED)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_listing_taken_while_clients_go_on_ends_equal_to_hdfs(data):
    """First start: the listing (txid T) lists one directory at a time, clients change the tree
    between two listStatus calls, after the listing and while its copies run; then the stream
    from T in random windows."""
    hdfs, s3 = ModelHdfs(), ModelS3()
    for d in ("/c/d1", "/c/d1/e", "/c/d2", "/out"):
        for name in ("a", "b"):
            hdfs.create(f"{d}/{name}", overwrite=False)

    def some_ops(most: int) -> None:
        for _ in range(data.draw(st.integers(0, most))):
            o = draw_op(data, hdfs)
            if o[0] != "sync":
                run(hdfs, o)

    some_ops(8)

    at_t = len(hdfs.events)
    # As onprem_agent.live.snapshot.walk: the root's own status first (it may be a file).
    listed = {"/c": hdfs.files["/c"].state()} if "/c" in hdfs.files else {}
    queue = ["/c"]
    while queue:
        some_ops(3)
        directory = queue.pop(0)
        if directory in hdfs.dirs:
            files, subdirs = list_dir(hdfs, directory, COVERED)
            listed.update(files)
            queue.extend(subdirs)
    s3.apply_listing(listed, hdfs, COVERED)
    done = cut = at_t
    for _ in range(data.draw(st.integers(0, 20))):
        o = draw_op(data, hdfs)
        if o[0] == "sync":
            if cut > done:
                s3.run_window(s3.plan(hdfs.events[done:cut], COVERED), hdfs, COVERED)
                done = cut
            cut = len(hdfs.events) if data.draw(st.booleans()) else cut
        else:
            run(hdfs, o)
    hdfs.close_all()
    s3.run_window(s3.plan(hdfs.events[done:], COVERED), hdfs, COVERED)
    assert s3.objects == hdfs.closed_files(COVERED)


def test_a_file_moved_into_a_listed_directory_while_the_listing_runs_is_relisted():
    """/c/top is listed, then a file moves there from /c/deep/x, listed next: it is in neither
    listing, and its RENAME (after T) has no object to move (make demo lost such a file)."""
    hdfs, s3 = ModelHdfs(), ModelS3()
    hdfs.mkdirs("/c/top")
    hdfs.mkdirs("/c/deep/x")
    hdfs.create("/c/deep/x/f", overwrite=False)
    at_t = len(hdfs.events)
    listed, _ = list_dir(hdfs, "/c/top", COVERED)
    hdfs.rename("/c/deep/x/f", "/c/top/f")
    listed.update(list_dir(hdfs, "/c/deep/x", COVERED)[0])
    s3.apply_listing(listed, hdfs, COVERED)
    assert s3.objects == {}
    hdfs.rename("/c/top/f", "/c/top/g")  # after the listing: moves what is replicated
    steps = s3.run_window(s3.plan(hdfs.events[at_t:at_t + 1], COVERED), hdfs, COVERED)
    assert steps.relists == ("/c/top/f",) and s3.gone_roots == {"/c/top/f"}
    steps = s3.run_window(s3.plan(hdfs.events[at_t + 1:], COVERED), hdfs, COVERED)
    assert steps.relists == ("/c/top/g",)
    assert s3.objects == hdfs.closed_files(COVERED) and s3.uploads == 1


def test_a_file_moved_out_of_a_directory_renamed_while_the_listing_ran_is_replicated():
    """The property test's draws: /c/d1 becomes /c/a before the listing reaches /c, so the
    listing copies /c/a/a; after it /c/a/a becomes /c/b. The first rename is relisted (it may
    have crossed the listing), and that relist walks /c/a after /c/a/a left: the second rename
    must bring /c/b, which is in no listing and at no key it could move from."""
    hdfs, s3 = ModelHdfs(), ModelS3()
    for d in ("/c/d1", "/c/d1/e", "/c/d2", "/out"):
        for name in ("a", "b"):
            hdfs.create(f"{d}/{name}", overwrite=False)
    hdfs.create("/c/d1/a", overwrite=False, close=False)  # exists: fails, logs nothing
    hdfs.create("/c/d1/a", overwrite=False, close=False)
    at_t = len(hdfs.events)
    hdfs.rename("/c/d1", "/c/a")
    hdfs.close("/c/a/a")  # closed already: fails
    listed = {}
    for directory in ("/c", "/c/a", "/c/d2", "/c/a/e"):
        listed.update(list_dir(hdfs, directory, COVERED)[0])
    s3.apply_listing(listed, hdfs, COVERED)
    assert "/c/a/a" in s3.objects
    hdfs.rename("/c/a/a", "/c/b")
    hdfs.close_all()
    steps = s3.run_window(s3.plan(hdfs.events[at_t:], COVERED), hdfs, COVERED)
    assert steps.relists == ("/c/a", "/c/b")
    assert s3.objects == hdfs.closed_files(COVERED)


def test_a_file_moved_out_of_a_relisted_tree_before_the_walk_is_replicated():
    """A window relists /c/d (renamed in from outside) after the next window's rename took
    /c/d/a out of it: the walk misses it, no key holds it, and that rename must still bring it
    (a relist is a listing: renames up to its end relist their destination)."""
    hdfs, s3 = ModelHdfs(), ModelS3()
    hdfs.create("/out/d/a", overwrite=False)
    hdfs.create("/out/d/b", overwrite=False)
    hdfs.mkdirs("/c")
    start = len(hdfs.events)
    hdfs.rename("/out/d", "/c/d")
    window = len(hdfs.events)
    hdfs.rename("/c/d/a", "/c/b")
    s3.run_window(s3.plan(hdfs.events[start:window], COVERED), hdfs, COVERED)
    assert sorted(s3.objects) == ["/c/d/b"]
    steps = s3.run_window(s3.plan(hdfs.events[window:], COVERED), hdfs, COVERED)
    assert steps.relists == ("/c/b",)
    assert s3.objects == hdfs.closed_files(COVERED)


def test_a_file_created_while_the_listing_ran_then_renamed_leaves_no_stale_object():
    """/c/a is created after T and listed; after the listing it becomes /c/b. Its CREATE
    (without overwrite) had no key to look at before T, but the listing made one: the window
    must delete it, not leave /c/a in S3 beside /c/b."""
    hdfs, s3 = ModelHdfs(), ModelS3()
    hdfs.create("/c/d1/a", overwrite=False)
    at_t = len(hdfs.events)
    hdfs.delete("/c/d1/a")
    hdfs.create("/c/a", overwrite=False)
    listed = {}
    for directory in ("/c", "/c/d1"):
        listed.update(list_dir(hdfs, directory, COVERED)[0])
    s3.apply_listing(listed, hdfs, COVERED)
    assert sorted(s3.objects) == ["/c/a"]
    hdfs.rename("/c/a", "/c/b")
    steps = s3.run_window(s3.plan(hdfs.events[at_t:], COVERED), hdfs, COVERED)
    assert steps.deletes == ("/c/a",)
    assert s3.objects == hdfs.closed_files(COVERED)


def test_a_copy_that_finds_another_file_open_at_its_path_is_pending_until_the_rename():
    """The window's CLOSE of /c/p runs after /c/p was renamed to /c/q and a new /c/p opened:
    the copy finds a file open for write, and the next window's RENAME must still bring /c/q."""
    hdfs, s3 = ModelHdfs(), ModelS3()
    hdfs.mkdirs("/c")
    start = len(hdfs.events)
    hdfs.create("/c/p", overwrite=False)
    window = len(hdfs.events)
    hdfs.rename("/c/p", "/c/q")
    hdfs.create("/c/p", overwrite=False, close=False)
    s3.run_window(s3.plan(hdfs.events[start:window], COVERED), hdfs, COVERED)
    assert s3.objects == {} and s3.gone == {"/c/p"}
    steps = s3.run_window(s3.plan(hdfs.events[window:], COVERED), hdfs, COVERED)
    assert steps.copies == ("/c/q",) and s3.gone == set()  # the new /c/p: no CLOSE yet
    start = len(hdfs.events)
    hdfs.close_all()
    s3.run_window(s3.plan(hdfs.events[start:], COVERED), hdfs, COVERED)
    assert s3.objects == hdfs.closed_files(COVERED) and s3.gone == set()


def test_temp_then_rename_is_one_upload_and_nothing_else():
    hdfs, s3 = ModelHdfs(), ModelS3()
    hdfs.mkdirs("/c/d1")
    start = len(hdfs.events)
    hdfs.create("/c/d1/_tmp_part-0", overwrite=False)
    hdfs.rename("/c/d1/_tmp_part-0", "/c/d1/part-0")
    steps = s3.run_window(plan_window(hdfs.events[start:], COVERED), hdfs, COVERED)
    assert steps.copies == ("/c/d1/part-0",) and steps.count == 1
    assert (s3.uploads, s3.server_copies, s3.deletes) == (1, 0, 0)
    assert s3.objects == hdfs.closed_files(COVERED)


def test_a_delete_cancels_the_pending_copy():
    hdfs, s3 = ModelHdfs(), ModelS3()
    start = len(hdfs.events)
    hdfs.create("/c/a", overwrite=False)
    hdfs.append("/c/a")
    hdfs.delete("/c/a")
    steps = s3.run_window(plan_window(hdfs.events[start:], COVERED), hdfs, COVERED)
    assert steps.count == 0 and s3.uploads == 0


def test_a_file_open_for_write_is_not_copied_until_close():
    hdfs, s3 = ModelHdfs(), ModelS3()
    hdfs.create("/c/a", overwrite=False, close=False)
    assert s3.run_window(plan_window(hdfs.events, COVERED), hdfs, COVERED).copies == ()
    start = len(hdfs.events)
    hdfs.close("/c/a")
    assert s3.run_window(plan_window(hdfs.events[start:], COVERED), hdfs, COVERED).copies == (
        "/c/a",)


def test_a_directory_rename_moves_only_what_was_copied_and_uploads_only_the_new():
    hdfs, s3 = ModelHdfs(), ModelS3()
    for name in ("a", "b"):
        hdfs.create(f"/c/d1/{name}", overwrite=False)
    s3.run_window(plan_window(hdfs.events, COVERED), hdfs, COVERED)
    assert s3.uploads == 2
    start = len(hdfs.events)
    hdfs.create("/c/d1/new", overwrite=False)  # not copied yet when the directory moves
    hdfs.rename("/c/d1", "/c/d9")
    hdfs.chmod("/c/d9/a", "0600")
    steps = s3.run_window(plan_window(hdfs.events[start:], COVERED), hdfs, COVERED)
    assert steps.server_copies == (("/c/d1/a", "/c/d9/a"), ("/c/d1/b", "/c/d9/b"))
    assert steps.copies == ("/c/d9/new",) and steps.deletes == ("/c/d1/a", "/c/d1/b")
    assert steps.metadata == ()  # the server-side copy writes /c/d9/a's metadata anyway
    assert (s3.uploads, s3.server_copies) == (3, 2)
    assert s3.objects == hdfs.closed_files(COVERED)


def test_metadata_changes_move_no_data():
    hdfs, s3 = ModelHdfs(), ModelS3()
    hdfs.create("/c/a", overwrite=False)
    s3.run_window(plan_window(hdfs.events, COVERED), hdfs, COVERED)
    start = len(hdfs.events)
    hdfs.chmod("/c/a", "0600")
    s3.run_window(plan_window(hdfs.events[start:], COVERED), hdfs, COVERED)
    assert (s3.uploads, s3.metadata_updates) == (1, 1)
    assert s3.objects["/c/a"].perms == "0600"


def test_a_swap_through_a_temporary_name_never_reads_an_overwritten_key():
    hdfs, s3 = ModelHdfs(), ModelS3()
    hdfs.create("/c/a", overwrite=False)
    hdfs.create("/c/b", overwrite=False)
    s3.run_window(plan_window(hdfs.events, COVERED), hdfs, COVERED)
    start = len(hdfs.events)
    hdfs.rename("/c/a", "/c/t")
    hdfs.rename("/c/b", "/c/a")
    hdfs.rename("/c/t", "/c/b")
    steps = s3.run_window(plan_window(hdfs.events[start:], COVERED), hdfs, COVERED)
    assert steps.server_copies == () and steps.copies == ("/c/a", "/c/b")
    assert s3.objects == hdfs.closed_files(COVERED)


def test_a_rename_from_outside_the_covered_paths_relists_the_tree():
    hdfs, s3 = ModelHdfs(), ModelS3()
    hdfs.create("/out/d/a", overwrite=False)
    hdfs.create("/out/d/b", overwrite=False)
    hdfs.mkdirs("/c")
    start = len(hdfs.events)
    hdfs.rename("/out/d", "/c/d")
    steps = s3.run_window(plan_window(hdfs.events[start:], COVERED), hdfs, COVERED)
    assert steps.relists == ("/c/d",)
    assert sorted(s3.objects) == ["/c/d/a", "/c/d/b"]


def test_the_path_function_composes_renames_and_kills():
    ops = (Move("/c/a", "/c/t"), Move("/c/b", "/c/a"), Kill("/c/x"), Move("/c/d", "/c/e"))
    assert forward("/c/a", ops) == "/c/t"
    assert forward("/c/b", ops) == "/c/a"
    assert forward("/c/x/y", ops) is None
    assert forward("/c/d/f", ops) == "/c/e/f"
    assert forward("/c/t", ops) is None  # overwritten by the first rename
    assert backward("/c/e/f", ops) == "/c/d/f"
    assert backward("/c/x", ops) is None


def test_snapshot_and_gap_records_are_not_window_events():
    with pytest.raises(ValueError, match="SNAPSHOT at txid 7"):
        plan_window([HdfsEvent("m", 7, 0, EventType.SNAPSHOT, "/c")], COVERED)


def test_reconcile_tells_missing_stale_metadata_and_extra_apart():
    hdfs = {"/c/a": FileState(1, 1), "/c/b": FileState(2, 2), "/c/c": FileState(3, 3, perms="0600")}
    s3 = {"/c/b": FileState(2, 5), "/c/c": FileState(3, 3), "/c/z": FileState(1, 1)}
    drift = reconcile(hdfs, s3)
    assert (drift.missing, drift.stale, drift.metadata, drift.extra) == (
        ("/c/a",), ("/c/b",), ("/c/c",), ("/c/z",))
    assert drift.count == 4
    assert reconcile(hdfs, hdfs).count == 0


def test_resolve_deletes_what_moved_out_of_cover():
    hdfs, s3 = ModelHdfs(), ModelS3()
    hdfs.create("/c/a", overwrite=False)
    hdfs.mkdirs("/out")
    s3.run_window(plan_window(hdfs.events, COVERED), hdfs, COVERED)
    start = len(hdfs.events)
    hdfs.rename("/c/a", "/out/a")
    plan = plan_window(hdfs.events[start:], COVERED)
    assert resolve(plan, {"/c/a"}).deletes == ("/c/a",)


def test_a_file_overwritten_by_a_rename_then_moved_on_leaves_no_stale_key():
    hdfs, s3 = ModelHdfs(), ModelS3()
    hdfs.create("/c/a", overwrite=False)
    hdfs.create("/c/b", overwrite=False)
    s3.run_window(plan_window(hdfs.events, COVERED), hdfs, COVERED)
    start = len(hdfs.events)
    hdfs.rename("/c/a", "/c/b", overwrite=True)
    hdfs.rename("/c/b", "/c/x")
    steps = s3.run_window(plan_window(hdfs.events[start:], COVERED), hdfs, COVERED)
    assert steps.server_copies == (("/c/a", "/c/x"),) and set(steps.deletes) == {"/c/a", "/c/b"}
    assert s3.objects == hdfs.closed_files(COVERED) and s3.uploads == 2


def test_a_listing_taken_after_a_rename_keeps_the_renamed_file():
    """First start (or after a GAP): the listing runs at txid T while HDFS moves on, so it can
    see a file under the name a rename after T gave it; replaying that rename must not delete
    the only copy (the demo lost one such file)."""
    hdfs, s3 = ModelHdfs(), ModelS3()
    hdfs.create("/c/a", overwrite=False)
    at_t = len(hdfs.events)
    hdfs.rename("/c/a", "/c/b")  # after T, before the listing reached /c
    s3.apply(reconcile({p: f.state() for p, f in hdfs.closed_files(COVERED).items()},
                       {}).steps(), hdfs, COVERED)  # the listing: /c/b
    steps = s3.run_window(s3.plan(hdfs.events[at_t:], COVERED), hdfs, COVERED)
    assert steps.deletes == () and steps.relists == ("/c/b",)
    assert s3.objects == hdfs.closed_files(COVERED)


def test_a_rename_over_a_copied_file_from_a_source_never_copied_copies_the_new_content():
    hdfs, s3 = ModelHdfs(), ModelS3()
    hdfs.create("/c/b", overwrite=False)
    s3.run_window(s3.plan(hdfs.events, COVERED), hdfs, COVERED)
    start = len(hdfs.events)
    hdfs.create("/c/x.tmp", overwrite=False)  # ignored: never copied under its own name
    hdfs.rename("/c/x.tmp", "/c/b", overwrite=True)
    s3.run_window(s3.plan(hdfs.events[start:], COVERED), hdfs, COVERED)
    assert s3.objects == hdfs.closed_files(COVERED)


def test_the_lag_in_bytes_counts_each_closed_file_once_at_its_last_size():
    def ev(type_: EventType, path: str, size: int | None = None) -> HdfsEvent:
        return HdfsEvent("prod", 1, 0, type_, path, size=size)

    scope = Scope.of(["/c"], [r"\.tmp$"])
    events = [ev(EventType.CLOSE, "/c/a", 100), ev(EventType.APPEND, "/c/a"),
              ev(EventType.CLOSE, "/c/a", 150),  # appended: the whole file is copied again
              ev(EventType.CLOSE, "/c/x.tmp", 40),  # copied under the name it is renamed to
              ev(EventType.TRUNCATE, "/c/b", 7),
              ev(EventType.CLOSE, "/c/concat", -1),  # Hadoop's CLOSE after a concat
              ev(EventType.CLOSE, "/elsewhere/z", 1000), ev(EventType.CREATE, "/c/open")]
    assert bytes_to_copy(events, scope) == 150 + 40 + 7


def test_a_file_only_appended_to_is_an_append_and_one_whose_prefix_changed_is_not():
    hdfs, s3 = ModelHdfs(), ModelS3()
    for name in ("a", "t", "o", "r", "src"):
        hdfs.create(f"/c/{name}", overwrite=False)
    s3.run_window(plan_window(hdfs.events, COVERED), hdfs, COVERED)
    start = len(hdfs.events)
    hdfs.append("/c/a")
    hdfs.append("/c/a")
    hdfs.truncate("/c/t")  # truncated, then appended: its object is no prefix of it
    hdfs.append("/c/t")
    hdfs.create("/c/o", overwrite=True)  # overwritten, then appended
    hdfs.append("/c/o")
    hdfs.rename("/c/src", "/c/r", overwrite=True)  # another file renamed onto it, then appended
    hdfs.append("/c/r")
    steps = s3.run_window(plan_window(hdfs.events[start:], COVERED), hdfs, COVERED)
    assert steps.copies == ("/c/a", "/c/o", "/c/r", "/c/t")
    assert steps.appends == ("/c/a",)
    assert s3.objects == hdfs.closed_files(COVERED)


def test_an_append_renamed_away_in_its_window_is_copied_whole():
    hdfs, s3 = ModelHdfs(), ModelS3()
    hdfs.create("/c/a", overwrite=False)
    s3.run_window(plan_window(hdfs.events, COVERED), hdfs, COVERED)
    start = len(hdfs.events)
    hdfs.append("/c/a")
    hdfs.rename("/c/a", "/c/b")
    steps = s3.run_window(plan_window(hdfs.events[start:], COVERED), hdfs, COVERED)
    assert steps.copies == ("/c/b",) and steps.appends == ()


def test_a_close_windows_after_its_append_is_an_append_and_a_pending_copy_is_not():
    hdfs, s3 = ModelHdfs(), ModelS3()
    for name in ("a", "b"):
        hdfs.create(f"/c/{name}", overwrite=False)
    s3.run_window(plan_window(hdfs.events, COVERED), hdfs, COVERED)
    start = len(hdfs.events)
    hdfs.append("/c/a", close=False)  # a writer holding the file open over windows
    s3.run_window(s3.plan(hdfs.events[start:], COVERED), hdfs, COVERED)
    start = len(hdfs.events)
    hdfs.close("/c/a")
    steps = s3.run_window(s3.plan(hdfs.events[start:], COVERED), hdfs, COVERED)
    assert steps.appends == ("/c/a",)

    hdfs.truncate("/c/b")
    hdfs.append("/c/b", close=False)  # the truncate's copy finds /c/b open: pending
    s3.run_window(s3.plan(hdfs.events[start + 1:], COVERED), hdfs, COVERED)
    assert s3.gone == {"/c/b"}
    start = len(hdfs.events)
    hdfs.close("/c/b")
    steps = s3.run_window(s3.plan(hdfs.events[start:], COVERED), hdfs, COVERED)
    assert steps.copies == ("/c/b",) and steps.appends == ()
    assert s3.objects == hdfs.closed_files(COVERED)
