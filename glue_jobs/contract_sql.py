"""The contract's rules on a parsed raw line as Spark SQL expressions, so that the Python check
(hdfs_events.validation.line_problem) runs only on the lines that may fail it.

A line is *clean* when both hold:
- it is canonical: the struct Spark parsed, written back as JSON, is the line byte for byte.
  That rules out everything SQL cannot see in a parsed struct: duplicate keys, whitespace,
  escapes (a lone surrogate), numbers or booleans in string fields, missing or unknown keys,
  non-JSON tokens, nesting (the schema's JSON is 3 deep), and bytes that are not UTF-8 (Spark's
  JSON writer only writes UTF-8);
- every rule line_problem applies holds, each written here from the same definitions
  (validation's tables and hdfs_events.event's enums; no number is repeated).

Only a line that is not clean goes to line_problem, which says why, in the consumer's words, or
accepts it (a rule here may be stricter than needed: the Python check then decides). A clean
line is accepted without it; tests/integration/glue/test_contract_sql.py runs the validation
cases through both and asserts the same decision.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from glue_jobs.schema import CORRUPT_RECORD, EVENT_SCHEMA
from hdfs_events.event import REQUIRED, XATTR_NAMESPACES, EventType
from hdfs_events.ids import CLUSTER_NAME
from hdfs_events.validation import (
    ACL_ENTRY_PATTERN,
    ENUM_FIELDS,
    INT_FIELD_RANGES,
    MAX_ACL_ENTRIES,
    MAX_ACL_ENTRY_CHARS,
    MAX_COMPONENT_BYTES,
    MAX_NAME_CHARS,
    MAX_PARTITION_KEY_BYTES,
    MAX_PATH_CHARS,
    MAX_PATH_DEPTH,
    MAX_XATTR_BYTES,
    MAX_XATTRS,
    NAME_FIELDS,
    PERMS_PATTERN,
    REQUIRED_BY_TYPE,
)

# Spark's JSON writer drops null fields by default; canonical JSON writes every one.
_WRITE_NULLS = {"ignoreNullFields": "false"}


def canonical(event: Column, line: Column) -> Column:
    """The line is exactly the JSON of the struct Spark parsed from it (false when unparsable)."""
    written = F.to_json(F.struct(*[event[f.name].alias(f.name) for f in EVENT_SCHEMA.fields]),
                        _WRITE_NULLS)
    return event[CORRUPT_RECORD].isNull() & (written == line)


def contract_holds(e: Column) -> Column:
    """True when the parsed event keeps every rule of hdfs_events.validation.line_problem; false
    (never null) when one may be broken."""
    rules = [*_from_dict_rules(e), *_check_event_rules(e)]
    holds = rules[0]
    for rule in rules[1:]:
        holds = holds & rule
    return F.coalesce(holds, F.lit(False))


def _from_dict_rules(e: Column) -> list[Column]:
    """HdfsEvent.from_dict: required fields, enum values, the agent's records, perms, acls,
    xattrs (types are the canonical check's)."""
    typ = e["type"]
    rules = [e[name].isNotNull() for name in REQUIRED]
    rules += [_optional(e[name], e[name].isin(*[m.value for m in enum]))
              for name, enum in ENUM_FIELDS.items()]
    rules += [
        (typ != EventType.GAP.value) | (e["gap_end_txid"] > e["txid"]),
        (typ != EventType.SNAPSHOT.value) | e["inode_type"].isNotNull(),
        _optional(e["perms"], _full_match(e["perms"], PERMS_PATTERN)),
        _optional(e["acls"], (F.size(e["acls"]) <= MAX_ACL_ENTRIES) & F.forall(
            e["acls"], lambda a: a.isNotNull() & (F.length(a) <= MAX_ACL_ENTRY_CHARS)
            & _full_match(a, ACL_ENTRY_PATTERN))),
        _optional(e["xattrs"], (F.size(e["xattrs"]) <= MAX_XATTRS) & F.forall(
            e["xattrs"], _xattr_holds)),
    ]
    return rules


def _xattr_holds(x: Column) -> Column:
    value = x["value"]
    return (x.isNotNull() & x["name"].isNotNull()
            & x["namespace"].isin(*sorted(XATTR_NAMESPACES))
            & (F.length(x["name"]) <= MAX_XATTR_BYTES)
            # Hadoop prints a value as "0x" and two hex digits a byte (validation.check_event).
            & (value.isNull() | (F.length(value) <= 2 + 2 * MAX_XATTR_BYTES)))


def _check_event_rules(e: Column) -> list[Column]:
    """validation.check_event: cluster name, integer ranges, fields required by type, paths,
    string sizes."""
    rules = [_full_match(e["cluster"], CLUSTER_NAME.pattern)]
    rules += [_optional(e[name], e[name].between(low, high))
              for name, (low, high) in INT_FIELD_RANGES.items()]
    rules += [(e["type"] != typ.value) | e[name].isNotNull()
              for typ, names in REQUIRED_BY_TYPE.items() for name in names]
    rules += [_path_holds(e["cluster"], e["path"]),
              _optional(e["dst_path"], _path_holds(e["cluster"], e["dst_path"])),
              _optional(e["symlink_target"], F.length(e["symlink_target"]) <= MAX_PATH_CHARS)]
    rules += [_optional(e[name], F.length(e[name]) <= MAX_NAME_CHARS) for name in NAME_FIELDS]
    return rules


def _path_holds(cluster: Column, path: Column) -> Column:
    """validation.check_path: absolute, normalized, HDFS's length and depth, component bytes,
    and the namespace index's partition key '<cluster>#<parent dir>' within DynamoDB's size."""
    components = F.split(F.substring(path, 2, MAX_PATH_CHARS), "/")
    name_bytes = F.octet_length(F.substring_index(path, "/", -1))
    parent_bytes = F.greatest(F.lit(1), F.octet_length(path) - name_bytes - 1)  # "/" for /a
    # check_path's fast path: with no "//", "/." or trailing "/" and no more bytes than one
    # component may hold, no component can break a rule, so only other paths are split.
    plain = ~(path.contains("//") | path.contains("/.") | path.endswith("/")
              | (F.octet_length(path) > MAX_COMPONENT_BYTES))
    normalized = F.when(plain, F.lit(True)).otherwise(
        (F.size(components) <= MAX_PATH_DEPTH)
        & ~F.exists(components, lambda c: c.isin("", ".", "..")
                    | (F.octet_length(c) > MAX_COMPONENT_BYTES)))
    index_key = F.octet_length(cluster) + 1 + parent_bytes <= MAX_PARTITION_KEY_BYTES
    return (path.startswith("/") & (F.length(path) <= MAX_PATH_CHARS)
            & (F.instr(path, "\0") == 0) & ((path == "/") | (normalized & index_key)))


def _optional(value: Column, rule: Column) -> Column:
    return value.isNull() | rule


def _full_match(value: Column, pattern: str) -> Column:
    # Python's re.fullmatch; Java's `$` would also match before a final newline, `\z` does not.
    return value.rlike(f"^(?:{pattern})\\z")
