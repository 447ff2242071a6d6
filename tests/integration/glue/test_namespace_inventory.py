"""The namespace inventory job, run through its entry script (what Glue runs: the driver's
ranged reads, the JVM decoder of the image's parts, the path joins) against images in the moto
server's S3: its rows equal Hadoop's own `hdfs oiv -p Delimited` on the same image, path for
path and every column oiv prints.

Two images: the kit's 2,000-file namespace (Hadoop's Offline Image Reconstructor: no
sub-sections, one part per section), whose table must also equal, to the millisecond, every
field of the namespace the kit declared it from; and one a live NameNode saved with parallel
load on (tests/kit/hadoop/live_image.py: INODE_SUB and INODE_DIR_SUB sub-sections, references,
a snapshot-only file, a symlink, EC and storage policies, an open file, quotas, a sticky
directory), on which the job must run one decode task per part. The live image's table is also
compared with the NameNode's own listing taken when the image was saved, field for field.
The bytes a NameNode does not write on demand (codecs, unknown fields, broken parts) are
crafted in test_fsimage_jvm_decoder.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from glue_jobs import namespace_inventory as job
from glue_jobs.catalog import JsonFileCatalog
from glue_jobs.fsimage_format import (
    ImageSummary,
    check_magic,
    part_data,
    read_name_system,
    read_summary_tail,
    summary_length,
)
from glue_jobs.inventory_image import image_object, read_layout, s3_client
from glue_jobs.layout import INVENTORY_LOCAL_CATALOG_KEY
from hdfs_events.inventory_schema import INVENTORY_FILE_COLUMNS
from hdfs_events.lake_layout import INVENTORY_DATE, INVENTORY_PREFIX, INVENTORY_TABLE, fsimage_key, run_prefix
from tests.integration.glue.lake import RawLake
from tests.kit.hadoop.live_image import COLD, ONE_MB, LiveImage, live_image
from tests.kit.hadoop.namespace_image import (
    NamespaceImage,
    as_delimited,
    declared_rows,
    delimited_listing,
    namespace_image,
)

pytestmark = pytest.mark.slow

KIT_FILES = 2_000
CLUSTER = "c1"


@pytest.fixture(scope="module")
def kit() -> NamespaceImage:
    return namespace_image(KIT_FILES)


@pytest.fixture(scope="module")
def kit_image(kit: NamespaceImage) -> bytes:
    return kit.image.read_bytes()


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveImage]:
    with live_image(tmp_path_factory.mktemp("inventory-nn")) as live:
        yield live


@pytest.fixture(scope="module")
def saved_image(saved: LiveImage) -> bytes:
    return saved.image.read_bytes()


def summary_of(image: bytes) -> ImageSummary:
    check_magic(image)
    return read_summary_tail(image, len(image))


def txid_of(image: bytes) -> int:
    summary = summary_of(image)
    ns = summary.section("NS_INFO")
    return read_name_system(part_data(image[ns.offset:ns.offset + ns.length], summary, ns)
                            ).transaction_id


def upload(lake: RawLake, image: bytes, *, cluster: str = CLUSTER, txid: int | None = None
           ) -> str:
    key = fsimage_key(cluster, txid_of(image) if txid is None else txid)
    lake.s3.put_object(Bucket=lake.bucket, Key=key, Body=image)
    return f"s3://{lake.bucket}/{key}"


def run(spark: Any, lake: RawLake, uri: str, capsys: pytest.CaptureFixture[str],
        *more: str) -> dict[str, Any]:
    capsys.readouterr()
    assert job.main(["--image", uri, "--cluster", CLUSTER, "--target", lake.uri, *more],
                    spark=spark) == 0
    return json.loads(capsys.readouterr().out)


def published(spark: Any, lake: RawLake) -> dict[tuple[str, str], str]:
    return JsonFileCatalog(lake.store, INVENTORY_LOCAL_CATALOG_KEY, INVENTORY_TABLE).locations()


def table_rows(spark: Any, location: str) -> dict[str, dict[str, Any]]:
    frame = spark.read.parquet(location)
    assert [(f.name, f.dataType.simpleString()) for f in frame.schema.fields] == list(
        INVENTORY_FILE_COLUMNS)
    rows = [r.asDict() for r in frame.collect()]
    by_path = {r["path"]: r for r in rows}
    assert len(by_path) == len(rows), "a path twice"
    return by_path


def oiv_rows(image: Path, work: Path) -> dict[str, dict[str, str]]:
    """Hadoop's own reader of the image: `hdfs oiv -p Delimited`, by path."""
    return delimited_listing(image, work / f"{image.name}.tsv")[0]


def in_oiv_words(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {path: as_delimited(row) for path, row in rows.items()}


def assert_same_rows(ours: dict[str, dict[str, Any]], theirs: dict[str, dict[str, Any]]) -> None:
    assert sorted(ours) == sorted(theirs)
    differ = [(ours[p], theirs[p]) for p in sorted(ours) if ours[p] != theirs[p]]
    assert differ == [], f"{len(differ)} of {len(ours)} rows differ, first: {differ[:3]}"


def test_the_kit_image_inventory_equals_oiv_and_the_declared_namespace(
        spark, lake: RawLake, kit: NamespaceImage, kit_image: bytes, capsys,
        tmp_path: Path) -> None:
    uri = upload(lake, kit_image)
    report = run(spark, lake, uri, capsys)

    head = lake.s3.head_object(Bucket=lake.bucket, Key=uri.split("/", 3)[3])
    image_date = head["LastModified"].astimezone(UTC).strftime("%Y-%m-%d")
    locations = published(spark, lake)
    assert list(locations) == [(CLUSTER, image_date)]
    rows = table_rows(spark, locations[(CLUSTER, image_date)])
    assert_same_rows(in_oiv_words(rows), oiv_rows(kit.image, tmp_path))
    # every field to the millisecond, as the kit declared each inode to Hadoop's reconstructor
    txid = txid_of(kit_image)
    assert_same_rows(rows, {path: {**row, "image_txid": txid}
                            for path, row in declared_rows(KIT_FILES).items()})
    files = [r for r in rows.values() if r["type"] == "FILE"]
    assert len(files) == KIT_FILES and sum(r["blocks"] for r in files) > 0
    assert len(rows) == 2_130 and report["rows"] == len(rows)
    assert report["image_txid"] == txid
    # ReverseXML writes no sub-sections: the whole INODE section is one part, one task
    assert (report["inode_parts"], report["inode_decode_tasks"]) == (1, 1)


def test_a_live_image_is_decoded_one_task_per_sub_section(spark, lake: RawLake, saved: LiveImage,
                                                          saved_image: bytes, capsys,
                                                          tmp_path: Path) -> None:
    summary = summary_of(saved_image)
    uri = upload(lake, saved_image)
    report = run(spark, lake, uri, capsys, "--image_date", "2026-11-20")

    rows = table_rows(spark, published(spark, lake)[(CLUSTER, "2026-11-20")])
    assert_same_rows(in_oiv_words(rows), oiv_rows(saved.image, tmp_path))
    # and equal to what the NameNode itself listed at the image's txid, every field a listing
    # carries (getListing with locations; getQuotaUsage of directories), a second oracle beside
    # oiv's, to the millisecond. Two fields differ by design, each pinned: a striped file's
    # listing says replication 1 (HdfsFileStatus's fixed figure for striped files) where the
    # image stores none (0, with its EC policy); a directory's EC policy is a default for files
    # made later (an xattr), not how anything is stored, so the table has none for it.
    listed = {p: {k: row[k] for k in saved.listing[p]} for p, row in rows.items()}
    assert (listed["/ec/striped.bin"]["replication"],
            saved.listing["/ec/striped.bin"]["replication"]) == (0, 1)
    assert (listed["/ec"]["erasure_coding_policy_id"],
            saved.listing["/ec"]["erasure_coding_policy_id"]) == (None, 1)
    listed["/ec/striped.bin"]["replication"] = 1
    listed["/ec"]["erasure_coding_policy_id"] = 1
    assert_same_rows(listed, saved.listing)
    # the cases the workload made are rows, with the typed fields oiv does not print
    assert rows["/lake/latest"]["type"] == "SYMLINK"
    assert rows["/lake/latest"]["symlink_target"] == "/lake/curated/p1.csv"
    assert (rows["/lake/curated/big.bin"]["blocks"], rows["/lake/curated/big.bin"]["size"]) == (
        3, 2 * ONE_MB + 17)
    assert rows["/cold/archive.bin"]["storage_policy_id"] == COLD
    assert rows["/ec/striped.bin"]["erasure_coding_policy_id"] == 1  # RS-6-3-1024k
    assert rows["/lake/curated/p1.csv"]["erasure_coding_policy_id"] is None
    assert rows["/scratch/open.log"]["under_construction"]
    assert rows["/scratch"]["perms"] == "1777"
    assert (rows["/quota"]["ns_quota"], rows["/quota/q"]["ds_quota"]) == (1000, 5 * 1024**3)
    assert "/snap/dir/renamed.txt" in rows and "/lake/out-of-snapshot.txt" in rows
    assert not any(p.startswith("/snap/dir/gone") or p.endswith("moved.txt") for p in rows)
    assert "/lake/raw/2024/feb/part-000.csv" in rows and "/lake/raw/2024/02" not in rows
    parts = len(summary.parts("INODE"))
    assert parts > 1 and len(summary.parts("INODE_DIR")) > 1
    assert summary.section("INODE_REFERENCE").length > 0
    assert (report["inode_parts"], report["inode_decode_tasks"]) == (parts, parts)
    assert report["directory_parts"] == len(summary.parts("INODE_DIR"))
    # fsimage_<txid>: the NameNode names the image for the last transaction it holds
    assert report["image_txid"] == txid_of(saved_image) == int(
        saved.image.name.removeprefix("fsimage_"))

    # a rerun of the same image replaces the partition: a new run, the same rows once, and
    # the run it superseded removed (no grace period here)
    again = run(spark, lake, uri, capsys, "--image_date", "2026-11-20", "--retain_hours", "0")
    locations = published(spark, lake)
    assert list(locations) == [(CLUSTER, "2026-11-20")]
    assert locations[(CLUSTER, "2026-11-20")].rstrip("/").endswith(f"run={again['run_id']}")
    assert again["run_id"] != report["run_id"] and again["runs_removed"] == 1
    assert lake.keys(run_prefix(INVENTORY_PREFIX, CLUSTER, "2026-11-20", report["run_id"],
                                date_key=INVENTORY_DATE)) == []
    assert_same_rows(table_rows(spark, locations[(CLUSTER, "2026-11-20")]), rows)


def test_a_corrupt_part_stops_the_run_naming_its_section_and_byte(spark, lake: RawLake,
                                                                  saved_image: bytes,
                                                                  capsys) -> None:
    summary = summary_of(saved_image)
    part = summary.parts("INODE")[1]
    broken = bytearray(saved_image)
    # the part's first message length, made a varint that runs on: a message past the part
    broken[part.offset] = 0xFF
    broken[part.offset + 1] = 0x7F
    uri = upload(lake, bytes(broken))
    with pytest.raises(SystemExit) as stopped:
        job.main(["--image", uri, "--cluster", CLUSTER, "--target", lake.uri], spark=spark)
    assert f"INODE_SUB at byte {part.offset + 2}: message of " in str(stopped.value)
    assert uri in str(stopped.value)
    assert published(spark, lake) == {}


def test_the_summary_is_read_from_the_tail_in_one_get_or_two(lake: RawLake,
                                                             saved_image: bytes) -> None:
    """The job's driver reads the summary from the object's end; a summary longer than the
    first GET (4 KiB in the job, 16 bytes here) costs a second, exact one."""
    whole = summary_of(saved_image)
    for cut in (summary_length(saved_image), summary_length(saved_image) + 100):
        assert read_summary_tail(saved_image[-cut:], len(saved_image)) == whole
    client = s3_client()
    image = image_object(upload(lake, saved_image), client)
    for guess in (16, 4096):
        layout = read_layout(client, image, tail_guess=guess)
        assert layout.summary == whole
        assert layout.name_system.transaction_id == txid_of(saved_image)


def test_a_truncated_image_object_stops_the_run_before_spark(spark, lake: RawLake,
                                                             saved_image: bytes) -> None:
    uri = upload(lake, saved_image[:len(saved_image) // 2], txid=txid_of(saved_image))
    with pytest.raises(SystemExit, match=r"FileSummary at byte \d+"):
        job.main(["--image", uri, "--cluster", CLUSTER, "--target", lake.uri], spark=spark)


def test_an_image_of_another_cluster_is_refused_naming_both(spark, lake: RawLake,
                                                            saved_image: bytes) -> None:
    uri = upload(lake, saved_image, cluster="other")
    with pytest.raises(SystemExit, match=r"names cluster 'other'.*--cluster 'c1'"):
        job.main(["--image", uri, "--cluster", CLUSTER, "--target", lake.uri], spark=spark)
    assert published(spark, lake) == {}


def test_a_bad_image_date_is_refused_naming_the_argument(lake: RawLake) -> None:
    with pytest.raises(SystemExit, match="--image_date must be YYYY-MM-DD, got '2026-13-01'"):
        job.main(["--image", f"s3://{lake.bucket}/x", "--cluster", CLUSTER, "--target",
                  lake.uri, "--image_date", "2026-13-01"])


REQUIRED = ["--image", "s3://lake/x", "--cluster", CLUSTER, "--target", "file:///nowhere"]


@pytest.mark.parametrize(("given", "refusal"), [
    (["--repair_after", "1200"], "--repair_after repairs the index: it needs --index_table"),
    (["--index_table", "idx", "--repair_after", "12x"],
     r"--repair_after must be a txid \(an integer >= 0\), got '12x'"),
    (["--index_table", "idx", "--repair_after", "-3"], r"--repair_after must be a txid .*'-3'"),
    (["--index_table", "idx", "--repair_after", "5", "--repair_wait_s", "soon"],
     "--repair_wait_s must be seconds >= 0, got 'soon'"),
    (["--index_table", "idx", "--repair_wait_s", "-1"], "--repair_wait_s must be .* got '-1'"),
])
def test_bad_repair_arguments_are_refused_naming_them(given: list[str], refusal: str) -> None:
    with pytest.raises(SystemExit, match=refusal):
        job.main([*REQUIRED, *given])  # before any S3 call or Spark


def test_a_repair_names_the_agents_checkpoint_and_waits_900_s_by_default() -> None:
    from glue_jobs.runtime import resolve_args

    def indexing(*given: str) -> Any:
        return job.index_settings_from(resolve_args([*REQUIRED, *given], job.SPEC,
                                                    prog=job.JOB_NAME))
    repair = indexing("--index_table", "idx", "--repair_after", "1200")
    assert (repair.repair_after, repair.repair_wait_s) == (1200, 900.0)
    assert indexing("--index_table", "idx").repair_after is None  # a first start
    assert indexing() is None


def test_paths_are_joined_in_one_pass_through_references_leaving_orphans_out(spark) -> None:
    """The transforms on a hand-made tree: / -> a (16386) -> b (16387) -> f (16388); a
    reference child of a, resolved by the INODE_DIR decode (inode 16389, "r"); 16390 "lost"
    under a directory (16391) that no directory lists, as a snapshot keeps it."""
    from glue_jobs import inventory_paths as paths
    from glue_jobs.inventory_image import INODE_DDL

    def inode(i: int, kind: str, name: str) -> tuple[Any, ...]:
        return (i, kind, name, 5, 0, "u", "g", 0o1755, 0, 0, 0, 0, 0, None, False, -1, -1, None)

    inodes = spark.createDataFrame([
        inode(16385, "DIRECTORY", ""), inode(16386, "DIRECTORY", "a"),
        inode(16387, "DIRECTORY", "b"), inode(16388, "FILE", "f"), inode(16389, "FILE", "r"),
        inode(16390, "FILE", "lost"), inode(16391, "DIRECTORY", "gone")], INODE_DDL)
    links = spark.createDataFrame([(16386, 16385), (16387, 16386), (16388, 16387),
                                   (16389, 16386), (16390, 16391)], "child bigint, parent bigint")
    directories = inodes.where("kind = 'DIRECTORY'").select("id", "name")
    dir_paths, levels = paths.directory_paths(directories.transform(
        paths.directory_parents(links)))
    assert sorted(tuple(r) for r in dir_paths.collect()) == [
        (16385, "/"), (16386, "/a"), (16387, "/a/b")]
    assert levels == 2
    rows = inodes.transform(paths.inventory_rows(links, dir_paths, 42))
    assert sorted((r["path"], r["type"], r["perms"], r["image_txid"]) for r in rows.collect()
                  ) == [("/", "DIRECTORY", "1755", 42), ("/a", "DIRECTORY", "1755", 42),
                        ("/a/b", "DIRECTORY", "1755", 42), ("/a/b/f", "FILE", "1755", 42),
                        ("/a/r", "FILE", "1755", 42)]


def test_a_directory_that_is_its_own_ancestor_stops_the_run_naming_it(spark) -> None:
    from glue_jobs import inventory_paths as paths

    loop = spark.createDataFrame([(16386, 16387, "a"), (16387, 16386, "b")],
                                 "id bigint, parent bigint, name string")
    with pytest.raises(Exception, match=r"ImageFormatError: INODE_DIR: directory 1638[67] is "
                       "its own ancestor"):
        paths.directory_paths(loop)
