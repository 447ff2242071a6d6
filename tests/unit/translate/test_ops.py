"""Single ops the real sample lacks, each checked against Hadoop's translator (3.x)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hdfs_events.event import HdfsEvent, XAttr
from onprem_agent.editlog import EditLogError, read_ops, unmangle
from onprem_agent.translate import translate_ops
from tests.unit.translate.oev import add, block, record, rename_old, write


def events_of(tmp_path: Path, *records: str) -> list[HdfsEvent]:
    return list(translate_ops(read_ops(write(tmp_path, *records)), "c1"))


def test_op_append_yields_append_with_its_new_block_flag(tmp_path: Path) -> None:
    body = ("<PATH>/logs/app.log</PATH><CLIENT_NAME>c</CLIENT_NAME>"
            "<CLIENT_MACHINE>h</CLIENT_MACHINE><NEWBLOCK>{}</NEWBLOCK>\n")
    events = events_of(tmp_path, record("OP_APPEND", 7, body.format("true")),
                       record("OP_APPEND", 8, body.format("false")))
    assert [(e.type, e.path, e.new_block, e.timestamp) for e in events] == [
        ("APPEND", "/logs/app.log", True, None), ("APPEND", "/logs/app.log", False, None)]


def test_op_add_with_blocks_is_an_append_of_older_layouts(tmp_path: Path) -> None:
    [event] = events_of(tmp_path, record("OP_ADD", 3, add("/f", blocks=block(1, 512))))
    assert (event.type, event.path, event.new_block, event.owner) == ("APPEND", "/f", False, None)


@pytest.mark.parametrize(("policy", "erasure_coded"), [("", False), ("0", False), ("1", True),
                                                       ("3", True)])
def test_create_is_erasure_coded_when_the_policy_is_not_replication(
        tmp_path: Path, policy: str, erasure_coded: bool) -> None:
    extra = f"<ERASURE_CODING_POLICY_ID>{policy}</ERASURE_CODING_POLICY_ID>" if policy else ""
    [event] = events_of(tmp_path, record("OP_ADD", 3, add(extra=extra)))
    assert event.erasure_coded is erasure_coded
    assert (event.ctime, event.timestamp, event.overwrite) == (999, 999, False)  # ATIME


def test_chown_of_only_the_group_leaves_owner_null(tmp_path: Path) -> None:
    [event] = events_of(tmp_path, record("OP_SET_OWNER", 4,
                                         "<SRC>/d</SRC><GROUPNAME>ops</GROUPNAME>\n"))
    assert (event.metadata_type, event.owner, event.group) == ("OWNER", None, "ops")


@pytest.mark.parametrize(("mode", "perms"), [(420, "0644"), (1023, "1777"), (0, "0000"),
                                             (4095, "1777")])
def test_modes_become_octal_with_the_sticky_bit(tmp_path: Path, mode: int, perms: str) -> None:
    [event] = events_of(tmp_path, record("OP_SET_PERMISSIONS", 4,
                                         f"<SRC>/d</SRC><MODE>{mode}</MODE>\n"))
    assert event.perms == perms


def test_concat_of_three_sources_indexes_events_0_to_4(tmp_path: Path) -> None:
    sources = "".join(f"<SOURCE{i}>/s{i}</SOURCE{i}>" for i in (1, 2, 3))
    events = events_of(tmp_path, record(
        "OP_CONCAT_DELETE", 9,
        f"<LENGTH>0</LENGTH><TRG>/t</TRG><TIMESTAMP>77</TIMESTAMP><SOURCES>{sources}</SOURCES>\n"))
    assert [(e.txid, e.index, e.type, e.path, e.size, e.timestamp) for e in events] == [
        (9, 0, "APPEND", "/t", None, None), (9, 1, "UNLINK", "/s1", None, 77),
        (9, 2, "UNLINK", "/s2", None, 77), (9, 3, "UNLINK", "/s3", None, 77),
        (9, 4, "CLOSE", "/t", -1, 77)]


def test_default_acl_entries_and_empty_acl(tmp_path: Path) -> None:
    entries = ("<ENTRY><SCOPE>DEFAULT</SCOPE><TYPE>GROUP</TYPE><NAME>data eng</NAME>"
               "<PERM>r-x</PERM></ENTRY><ENTRY><SCOPE>ACCESS</SCOPE><TYPE>OTHER</TYPE>"
               "<PERM>---</PERM></ENTRY>")
    events = events_of(tmp_path, record("OP_SET_ACL", 5, f"<SRC>/d</SRC>{entries}\n"),
                       record("OP_SET_ACL", 6, "<SRC>/d</SRC>\n"))
    assert [e.acls for e in events] == [("default:group:data eng:r-x", "other::---"), ()]


def test_xattr_in_other_namespaces(tmp_path: Path) -> None:
    [event] = events_of(tmp_path, record(
        "OP_SET_XATTR", 5, "<SRC>/d</SRC><XATTR><NAMESPACE>TRUSTED</NAMESPACE><NAME>k</NAME>"
        "</XATTR><XATTR><NAMESPACE>RAW</NAMESPACE><NAME>r</NAME><VALUE>0x00</VALUE></XATTR>\n"))
    assert event.xattrs == (XAttr("TRUSTED", "k", None), XAttr("RAW", "r", "0x00"))


def test_mangled_entities_and_non_ascii_paths_come_back_exact(tmp_path: Path) -> None:
    # oev writes '\' as \005c; and control characters as \XXXX; ; XML escapes & < >.
    [event] = events_of(tmp_path, record(
        "OP_RENAME_OLD", 5, rename_old(src="/u/C:\\005c;tmp\\005c;x &amp; y &lt;1&gt;",
                                       dst="/u/売上 März\\0007;.csv")))
    assert event.path == "/u/C:\\tmp\\x & y <1>"
    assert event.dst_path == "/u/売上 März\x07.csv"


def test_booleans_parse_as_java_does(tmp_path: Path) -> None:
    body = add().replace("<OVERWRITE>false</OVERWRITE>", "<OVERWRITE>TRUE</OVERWRITE>")
    [event] = events_of(tmp_path, record("OP_ADD", 3, body))
    assert event.overwrite is True


@pytest.mark.parametrize(("text", "plain"), [
    ("", ""), ("plain/path", "plain/path"), ("\\005c;", "\\"), ("a\\0000;b", "a\x00b"),
    ("\\001F;\\fffe;", "\x1f\ufffe"), ("x\\005c;005c;", "x\\005c;"),
])
def test_unmangle_reads_hadoops_escapes(text: str, plain: str) -> None:
    assert unmangle(text) == plain


@pytest.mark.parametrize("text", ["\\", "a\\b", "\\12;", "\\00410;", "\\zzzz;", "\\d800;",
                                  "\\0041"])
def test_unmangle_refuses_what_oev_never_writes(text: str) -> None:
    with pytest.raises(ValueError):
        unmangle(text)


def test_a_bad_escape_names_txid_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, record("OP_DELETE", 12,
                                  "<LENGTH>0</LENGTH><PATH>/a\\b</PATH><TIMESTAMP>1</TIMESTAMP>\n"))
    with pytest.raises(EditLogError) as err:
        list(translate_ops(read_ops(path), "c1", source=str(path)))
    assert (err.value.txid, err.value.field) == (12, "PATH")
