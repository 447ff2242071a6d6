"""The contract's rules on a parsed raw line as Spark SQL expressions, so that the Python check
(hdfs_events.validation.line_problem) runs only on the lines that may fail it.

A line is *clean* when both hold:
- it is canonical: exactly what the contract's writer (HdfsEvent.to_json) produces for the
  values read from it, proved byte for byte by our JVM expression (parse_canonical_line, built
  from glue_jobs/jvm) in the same pass that parses it. That rules out everything SQL cannot see
  in a parsed struct: duplicate, missing, reordered or unknown keys, whitespace, escapes Python
  does not write (a lone surrogate, an escaped letter), numbers or booleans in string fields,
  number forms (1.0, -0, 1e0), non-JSON tokens, nesting, and bytes that are not UTF-8;
- every rule line_problem applies holds, each written here from the same definitions
  (validation's tables and hdfs_events.event's enums; no number is repeated).

Only a line that is not clean goes to line_problem, which says why, in the consumer's words, or
accepts it (a rule here may be stricter than needed: the Python check then decides). A clean
line is accepted without it; tests/integration/glue/test_contract_sql.py runs the validation
cases through both and asserts the same decision.
"""

from __future__ import annotations

from py4j.java_gateway import JavaClass
from pyspark import SparkContext
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from glue_jobs.runtime import JobJarMissing
from glue_jobs.schema import CORRUPT_RECORD, RAW_LINE_SCHEMA
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

_EXPRESSION = "hdfsevents.glue.ParseCanonicalLine"
# The event's fields as from_json reads them, every one nullable: a canonical line may hold null
# where the contract requires a value (contract_holds refuses it).
_LINE_FIELDS = T.StructType([f for f in RAW_LINE_SCHEMA.fields if f.name != CORRUPT_RECORD])


def parse_canonical_line(line: Column) -> Column:
    """struct<event, not_canonical>: for a canonical line, the event parsed with the contract's
    fields, then a null CORRUPT_RECORD (RAW_LINE_SCHEMA, the type from_json reads it as) and a null
    not_canonical; for any other line a null event and where and why it is not canonical.

    One pass over the line's bytes in the JVM, where from_json, to_json of the result and a
    comparison of the two texts took three (glue_jobs/jvm/pom.xml says why a jar of our own)."""
    jvm = SparkContext._active_spark_context._jvm  # type: ignore[union-attr]
    expression = jvm
    for part in _EXPRESSION.split("."):
        expression = getattr(expression, part)
    if not isinstance(expression, JavaClass):
        raise JobJarMissing(
            f"{_EXPRESSION} is not on Spark's classpath: build glue_jobs/jvm with `make glue-jar` "
            "and start the session with glue_jobs.runtime.job_conf (on Glue the job's "
            "--extra-jars carries it)")
    return Column(expression.column(line._jc, _LINE_FIELDS.json(), CORRUPT_RECORD))


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
