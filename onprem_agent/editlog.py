"""Streams the ops of an edit log in `hdfs oev -p xml` form, in constant memory.

Real edit logs run to gigabytes and about two thirds of their records are block bookkeeping
(OP_ALLOCATE_BLOCK_ID, OP_SET_GENSTAMP_V2, OP_ADD_BLOCK, OP_UPDATE_BLOCKS) that translation never
looks inside. Building an ElementTree for every record costs ~0.5 us per element, so the reader
works in two layers:
- every byte goes through expat (pyexpat, C, no Python callbacks) in 1 MiB chunks, so malformed
  XML anywhere is still reported with its line and column;
- records are cut out of the chunk at the byte level (oev writes `<RECORD>` ... `</RECORD>`
  with `<OPCODE>` and `<TXID>` as plain text), and each op's DATA element is built by the C
  XML parser only when someone reads `op.data` (translation does, for namespace ops).
Anything oev never writes that would make byte-level cutting unsafe (comments, CDATA, DOCTYPE,
processing instructions, `<RECORD>` with attributes, a root element with attributes or another
encoding than UTF-8) switches to a plain `iterparse` of the rest of the stream, which handles
all of XML at about half the speed.
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from xml.parsers import expat


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

    @property
    def data_bytes(self) -> bytes | None:
        """The DATA element's bytes as oev wrote them, while not yet parsed (else None)."""
        return None


class _LazyEditOp(EditOp):
    """An EditOp whose DATA element is parsed from the record's bytes on first access."""

    __slots__ = ("_data", "_element")

    def __init__(self, opcode: str, txid: int, data: bytes) -> None:
        _set_opcode(self, opcode)
        _set_txid(self, txid)
        _set_data(self, data)
        _set_element(self, None)

    @property
    def data_bytes(self) -> bytes | None:
        return self._data if self._element is None else None  # type: ignore[return-value]

    @property  # type: ignore[override]
    def data(self) -> ET.Element:
        element = self._element
        if element is None:
            # These bytes already passed expat as part of the whole document: well-formed.
            element = ET.fromstring(self._data)
            _set_element(self, element)
        return element  # type: ignore[return-value]


# Slot descriptors: a frozen dataclass refuses plain assignment, and object.__setattr__ costs
# twice as much per record on the reader's hot path.
_set_opcode = EditOp.__dict__["opcode"].__set__
_set_txid = EditOp.__dict__["txid"].__set__
_set_data = _LazyEditOp.__dict__["_data"].__set__
_set_element = _LazyEditOp.__dict__["_element"].__set__


_CHUNK = 1 << 20
# How oev starts every record; group 2 starts the DATA element.
_HEAD = re.compile(rb"<RECORD>\s*<OPCODE>([A-Z0-9_]+)</OPCODE>\s*(<DATA>)\s*<TXID>([0-9]+)</TXID>")
_PROLOG = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*(?:<\?xml\s[^>]*\?>)?\s*<EDITS>")
_ENCODING = re.compile(rb"encoding\s*=\s*[\"']([^\"']*)[\"']")


def read_ops(source: str | Path | BinaryIO, *, name: str | None = None) -> Iterator[EditOp]:
    """Yields every op of an oev XML edit log in file order.

    Raises EditLogError naming the file and the last good txid on malformed XML.
    """
    label = name or (str(source) if isinstance(source, (str, Path)) else "<stream>")
    if isinstance(source, (str, Path)):
        try:
            stream: BinaryIO = open(source, "rb")  # noqa: SIM115 - closed below
        except FileNotFoundError as exc:
            raise EditLogError(label, "no such file") from exc
        except IsADirectoryError as exc:
            raise EditLogError(label, "is a directory, not an edit log") from exc
        with stream:
            yield from _OevReader(stream, label).ops()
    else:
        yield from _OevReader(source, label).ops()


class _OevReader:
    def __init__(self, stream: BinaryIO, label: str) -> None:
        self.stream, self.label = stream, label
        self.last_txid: int | None = None
        self.checker = expat.ParserCreate()
        self.error: tuple[int, str] | None = None  # (byte offset, message) of malformed XML
        self.checked = 0  # bytes fed to the checker
        self.lines = 1  # line number at the start of the buffer

    def ops(self) -> Iterator[EditOp]:
        read = self.stream.read
        buf = read(_CHUNK)
        prolog = _PROLOG.match(buf)
        if (prolog is None or _foreign_encoding(buf[: prolog.end()]) or b"<!" in buf
                or b"<?" in buf[prolog.end():]):
            # Not only what oev writes (another root, a DTD, comments, attributes on <EDITS>,
            # another encoding): the full parser reads it, and says what is wrong if it is.
            yield from self.tree_ops(buf, read, synthetic_root=False)
            return
        self.check(buf, final=False)
        base, pos, eof = 0, prolog.end(), False  # base: stream offset of buf[0]
        while True:
            # Every complete record of the buffer that ends before any malformation.
            while (start := buf.find(b"<RECORD", pos)) >= 0 and (
                    end := buf.find(b"</RECORD>", start)) >= 0:
                end += 9
                if self.error and base + end > self.error[0]:
                    self.raise_error()
                if buf[start + 7] != 62 or buf.find(b"<RECORD", start + 8, end) >= 0:  # 62: ">"
                    # <RECORD a="1"> or </RECORD >: well-formed, but not for byte cutting.
                    yield from self.fall_back(buf, pos, read)
                    return
                yield self.op(buf, start, end)
                pos = end
            if self.error:  # it lies before the end of the next record
                self.raise_error()
            if eof:
                if b"<RECORD" in buf[pos:]:
                    yield from self.fall_back(buf, pos, read)
                return
            chunk = read(_CHUNK)
            if not chunk:
                eof = True
                self.check(b"", final=True)
                continue
            if b"<!" in chunk or b"<?" in chunk or buf[-1:] + chunk[:1] in (b"<!", b"<?"):
                # Comments, CDATA or processing instructions could hide tags from byte cutting.
                yield from self.fall_back(buf + chunk, pos, read)
                return
            self.check(chunk, final=False)
            self.lines += buf.count(b"\n", 0, pos)
            base += pos
            buf = buf[pos:] + chunk
            pos = 0

    def fall_back(self, buf: bytes, pos: int, read: object) -> Iterator[EditOp]:
        self.lines += buf.count(b"\n", 0, pos)
        yield from self.tree_ops(buf[pos:], read, synthetic_root=True)

    def op(self, buf: bytes, start: int, end: int) -> EditOp:
        head = _HEAD.match(buf, start, end)
        if head is not None:
            data_end = buf.rfind(b"</DATA>", head.end(), end)
            if data_end >= 0:
                op = _LazyEditOp(head.group(1).decode("ascii"), int(head.group(3)),
                                 buf[head.start(2):data_end + 7])
                self.last_txid = op.txid
                return op
        # Not laid out as oev lays records out (entities, other order): the full parser.
        op = _record_to_op(ET.fromstring(buf[start:end]), self.label, self.last_txid)
        self.last_txid = op.txid
        return op

    def check(self, chunk: bytes, *, final: bool) -> None:
        if self.error:
            return
        try:
            self.checker.Parse(chunk, final)
        except expat.ExpatError as exc:
            self.error = (self.checker.ErrorByteIndex,
                          f"malformed XML at line {exc.lineno}, column {exc.offset}: "
                          f"{expat.ErrorString(exc.code)}")

    def raise_error(self) -> None:
        assert self.error is not None
        after = f" (after txid {self.last_txid})" if self.last_txid is not None else ""
        _, message = self.error
        head, _, tail = message.partition(": ")
        raise EditLogError(self.label, f"{head}{after}: {tail}")

    def tree_ops(self, head: bytes, read: object, *, synthetic_root: bool) -> Iterator[EditOp]:
        """The rest of the stream through iterparse, clearing each record once handed out."""
        stream = _Joined(b"<EDITS>" + head if synthetic_root else head, read)  # type: ignore
        line_offset = self.lines - 1 if synthetic_root else 0
        root: ET.Element | None = None
        try:
            for event, elem in ET.iterparse(stream, events=("start", "end")):
                if root is None:
                    root = elem
                    if elem.tag != "EDITS":
                        raise EditLogError(self.label,
                                           f"root element is <{elem.tag}>, expected <EDITS>")
                    continue
                if event != "end" or elem.tag != "RECORD":
                    continue
                op = _record_to_op(elem, self.label, self.last_txid)
                self.last_txid = op.txid
                yield op
                # Drop processed records so memory stays flat on multi-GB logs.
                root.clear()
        except ET.ParseError as exc:
            after = f" (after txid {self.last_txid})" if self.last_txid is not None else ""
            line, column = exc.position
            raise EditLogError(self.label, f"malformed XML at line {line + line_offset}, "
                                           f"column {column}{after}: {exc.msg}") from exc


class _Joined(io.RawIOBase):
    """`head` then the rest of a stream, as one readable binary stream."""

    def __init__(self, head: bytes, read: object) -> None:
        self.head, self.read_more = head, read

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        data = self.head or self.read_more(len(b))  # type: ignore[operator]
        n = min(len(b), len(data))
        b[:n] = data[:n]
        self.head = data[n:]
        return n


def _foreign_encoding(prolog: bytes) -> bool:
    m = _ENCODING.search(prolog)
    return m is not None and m.group(1).lower().replace(b"_", b"-") not in (b"utf-8", b"utf8",
                                                                           b"us-ascii")


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
