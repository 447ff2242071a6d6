"""The reader gives the same ops whatever well-formed XML shape the edit log takes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from onprem_agent.editlog import EditLogError, read_ops
from onprem_agent.translate import translate_ops
from tests.kit.workload import write_edit_log


def events(source) -> list[dict]:
    return [e.to_dict() for e in translate_ops(read_ops(source), "c1")]


@pytest.fixture(scope="module")
def sample_text(edits_sample: Path) -> str:
    return edits_sample.read_text(encoding="utf-8")


@pytest.mark.parametrize("transform", [
    lambda t: t.replace("<RECORD>", "<!-- a </RECORD> in a comment -->\n  <RECORD>", 5),
    lambda t: t.replace("<PATH>/file_create</PATH>", "<PATH><![CDATA[/file_create]]></PATH>"),
    lambda t: t.replace("<RECORD>", '<RECORD note="x">'),
    lambda t: t.replace("</RECORD>", "</RECORD >"),
    lambda t: t.replace("<TXID>57</TXID>", "<TXID>&#53;7</TXID>"),
    lambda t: t.replace("<OPCODE>OP_DELETE</OPCODE>", "<OPCODE>OP_&#68;ELETE</OPCODE>"),
    lambda t: t.replace("<EDITS>", '<!DOCTYPE EDITS>\n<EDITS>'),
    lambda t: t.replace("<EDITS>", '<EDITS xmlns:h="urn:x">'),
    lambda t: t.replace("</EDITS>", "<?pi data?></EDITS>"),
    lambda t: "\ufeff" + t,
    lambda t: t.replace("\n", "\r\n"),
    lambda t: t.replace("\n      ", "").replace("\n    ", "").replace("\n  ", ""),
], ids=["comment", "cdata", "record-attr", "end-tag-space", "char-ref-txid", "char-ref-opcode",
        "doctype", "root-xmlns", "pi", "bom", "crlf", "compact"])
def test_unusual_but_well_formed_xml_reads_the_same(tmp_path: Path, sample_text: str,
                                                     edits_sample: Path, transform) -> None:
    path = tmp_path / "e.xml"
    path.write_bytes(transform(sample_text).encode("utf-8"))
    assert events(path) == events(edits_sample)


def test_another_encoding_is_honoured(tmp_path: Path, sample_text: str,
                                      edits_sample: Path) -> None:
    text = sample_text.replace('encoding="UTF-8"', 'encoding="ISO-8859-1"').replace(
        "/file_symlink", "/fïle_symlink")
    path = tmp_path / "latin1.xml"
    path.write_bytes(text.encode("latin-1"))
    got = events(path)
    assert [e["path"] for e in got if e["txid"] == 67] == ["/fïle_symlink"]
    assert len(got) == len(events(edits_sample))


def test_streams_and_records_across_chunk_boundaries(tmp_path: Path) -> None:
    path = tmp_path / "big.xml"
    write_edit_log(path, ops=6000, seed=4)  # ~2.5 MB: several 1 MiB chunks
    data = path.read_bytes()
    assert len(data) > 2 * (1 << 20)
    assert events(io.BytesIO(data)) == events(path)
    # a comment late in the file switches to the full parser mid-stream, losing nothing
    cut = data.index(b"<RECORD>", 2 * (1 << 20) + 100)
    mixed = data[:cut] + b"<!-- late -->" + data[cut:]
    assert events(io.BytesIO(mixed)) == events(path)


def test_malformation_far_into_a_chunk_keeps_the_records_before_it(tmp_path: Path) -> None:
    path = tmp_path / "big.xml"
    write_edit_log(path, ops=3000, seed=4)
    data = path.read_bytes()
    cut = data.index(b"<TXID>2500</TXID>")
    bad = data[:cut] + b"<oops>" + data[cut:]
    ops = []
    with pytest.raises(EditLogError) as err:
        ops.extend(op.txid for op in read_ops(io.BytesIO(bad), name="bad.xml"))
    assert ops == list(range(1, 2500))
    # expat notices the unclosed <oops> at </DATA>, a few lines into the damaged record
    first = bad[:cut].count(b"\n") + 1
    last = bad[:bad.index(b"</RECORD>", cut)].count(b"\n") + 1
    reported = int(str(err.value).split("line ")[1].split(",")[0])
    assert first <= reported <= last and "after txid 2499" in str(err.value)


def test_lazy_ops_parse_their_data_on_demand(edits_sample: Path) -> None:
    ops = list(read_ops(edits_sample))
    assert ops[24].opcode == "OP_ALLOCATE_BLOCK_ID"
    assert ops[24].data.findtext("BLOCK_ID") == "1073741825"
    assert ops[24].data.tag == "DATA" and ops[24].data is ops[24].data
