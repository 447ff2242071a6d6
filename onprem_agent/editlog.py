"""Streams the ops of an edit log in `hdfs oev -p xml` form, in constant memory.

Real edit logs run to gigabytes, so records are parsed one at a time with the C XML parser
(`iterparse`) and dropped from the tree as soon as they are handed out. An op is handed out as
its DATA element; translation reads only the fields it needs.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO


class EditLogError(Exception):
    """Bad edit-log input, with the file, the record's txid and the field where known."""

    def __init__(self, source: str, message: str, *, txid: int | None = None,
                 field: str | None = None) -> None:
        where = f"{source}"
        if txid is not None:
            where += f", txid {txid}"
        if field is not None:
            where += f", field {field}"
        super().__init__(f"{where}: {message}")
        self.source, self.txid, self.field = source, txid, field


@dataclass(frozen=True, slots=True)
class EditOp:
    opcode: str
    txid: int
    data: ET.Element  # the record's DATA element


def read_ops(source: str | Path | BinaryIO, *, name: str | None = None) -> Iterator[EditOp]:
    """Yields every op of an oev XML edit log in file order.

    Raises EditLogError naming the file and the last good txid on malformed XML.
    """
    label = name or (str(source) if isinstance(source, (str, Path)) else "<stream>")
    last_txid: int | None = None
    root: ET.Element | None = None
    try:
        for event, elem in ET.iterparse(source, events=("start", "end")):
            if root is None:
                root = elem
                if elem.tag != "EDITS":
                    raise EditLogError(label, f"root element is <{elem.tag}>, expected <EDITS>")
                continue
            if event != "end" or elem.tag != "RECORD":
                continue
            op = _record_to_op(elem, label, last_txid)
            last_txid = op.txid
            yield op
            # Drop processed records so memory stays flat on multi-GB logs.
            root.clear()
    except ET.ParseError as exc:
        after = f" (after txid {last_txid})" if last_txid is not None else ""
        raise EditLogError(label, f"malformed XML at line {exc.position[0]}, column "
                                  f"{exc.position[1]}{after}: {exc.msg}", txid=None) from exc
    except FileNotFoundError as exc:
        raise EditLogError(label, "no such file") from exc


def _record_to_op(record: ET.Element, label: str, last_txid: int | None) -> EditOp:
    opcode = record.findtext("OPCODE")
    data = record.find("DATA")
    if not opcode or data is None:
        after = f"after txid {last_txid}" if last_txid is not None else "at the start"
        raise EditLogError(label, f"RECORD {after} has no OPCODE or DATA")
    txid_text = data.findtext("TXID")
    if txid_text is None:
        raise EditLogError(label, f"{opcode} record after txid {last_txid} has no TXID",
                           field="TXID")
    try:
        txid = int(txid_text)
    except ValueError:
        raise EditLogError(label, f"{opcode}: TXID {txid_text!r} is not a number",
                           field="TXID") from None
    return EditOp(opcode=opcode, txid=txid, data=data)


# Hadoop's XMLUtils.mangleXmlString (what oev writes with) replaces each code point XML cannot
# carry (C0 controls but tab/LF/CR, surrogates, U+FFFE, U+FFFF) and the backslash itself with
# String.format("\\%04x;", cp): a backslash, exactly 4 hex digits (every such code point is
# <= U+FFFF), a semicolon. unmangleXmlString reads exactly 4 characters after a backslash and
# then requires ';', so a backslash that starts no such escape means the text was not written
# by oev. Unlike Hadoop's XML loader we do not trim(): the element text is exact as written.
_HEX = frozenset("0123456789abcdefABCDEF")


def unmangle(text: str) -> str:
    """Undoes oev's mangling; raises ValueError on a backslash that starts no valid escape."""
    if "\\" not in text:
        return text
    head, *rest = text.split("\\")
    out = [head]
    for part in rest:
        code = part[:4]
        if len(part) < 5 or part[4] != ";" or not _HEX.issuperset(code):
            raise ValueError(f"bad escape \\{part[:5]!s} in {text!r}: oev writes a backslash as "
                             "\\005c; and other escapes as \\ + 4 hex digits + ;")
        cp = int(code, 16)
        if 0xD800 <= cp <= 0xDFFF:
            # A lone UTF-16 surrogate: Java strings can hold one, UTF-8 text cannot, and no
            # HDFS client can send one (RPC strings are UTF-8); refuse rather than emit
            # events no JSON consumer can read.
            raise ValueError(f"escape \\{code}; in {text!r} is a lone UTF-16 surrogate")
        out.append(chr(cp))
        out.append(part[5:])
    return "".join(out)
