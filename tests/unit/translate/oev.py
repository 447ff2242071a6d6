"""Tiny builders of `hdfs oev -p xml` documents for tests (field names as Hadoop writes them)."""

from __future__ import annotations

from pathlib import Path


def record(opcode: str, txid: int | str, body: str = "") -> str:
    return (f"  <RECORD>\n    <OPCODE>{opcode}</OPCODE>\n    <DATA>\n      <TXID>{txid}</TXID>\n"
            f"{body}    </DATA>\n  </RECORD>\n")


def document(*records: str, version: int = -66) -> str:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<EDITS>\n'
            f"  <EDITS_VERSION>{version}</EDITS_VERSION>\n{''.join(records)}</EDITS>\n")


def write(tmp_path: Path, *records: str, name: str = "edits.xml") -> Path:
    path = tmp_path / name
    path.write_text(document(*records), encoding="utf-8")
    return path


PERMS = ("<PERMISSION_STATUS><USERNAME>alice</USERNAME><GROUPNAME>eng</GROUPNAME>"
         "<MODE>420</MODE></PERMISSION_STATUS>")


def add(path: str = "/a", *, extra: str = "", blocks: str = "") -> str:
    return (f"<LENGTH>0</LENGTH><INODEID>16386</INODEID><PATH>{path}</PATH>"
            "<REPLICATION>3</REPLICATION><MTIME>1000</MTIME><ATIME>999</ATIME>"
            "<BLOCKSIZE>134217728</BLOCKSIZE><CLIENT_NAME>c</CLIENT_NAME>"
            f"<CLIENT_MACHINE>127.0.0.1</CLIENT_MACHINE><OVERWRITE>false</OVERWRITE>{blocks}"
            f"{PERMS}{extra}\n")


def block(block_id: int, num_bytes: int) -> str:
    return (f"<BLOCK><BLOCK_ID>{block_id}</BLOCK_ID><NUM_BYTES>{num_bytes}</NUM_BYTES>"
            "<GENSTAMP>1001</GENSTAMP></BLOCK>")


def rename_old(src: str = "/a", dst: str = "/b", ts: int = 5) -> str:
    return f"<LENGTH>0</LENGTH><SRC>{src}</SRC><DST>{dst}</DST><TIMESTAMP>{ts}</TIMESTAMP>\n"
