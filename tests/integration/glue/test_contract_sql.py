"""The compaction's Spark SQL pre-check (glue_jobs.contract_sql) against the contract's Python
check (hdfs_events.validation.line_problem): on a corpus of good and broken lines, the job
rejects every line line_problem rejects, with line_problem's own reason (the field it names),
and accepts every line line_problem accepts unless the lake's stricter rules refuse it.

The corpus: real and generated events of every type, written as the consumer writes them
(canonical JSON, which the SQL rules judge alone), each field of each set to hostile values
(the consumer fuzzing's values and the validation's limits, one past and at the limit) or
dropped, in canonical form and as json.dumps writes it by default (spaces, ASCII escapes: the
Python path), plus text-level breakage (duplicate keys, NaN, nesting, escapes, long numbers).
"""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.sql import types as T

from glue_jobs.compaction import NOT_UTF8, classify_lines, with_reasons
from glue_jobs.contract_sql import contract_holds, parse_canonical_line
from glue_jobs.schema import ADDED_FIELDS, CORRUPT_RECORD, RAW_LINE_SCHEMA
from hdfs_events.event import FIELDS, REQUIRED, EventType, HdfsEvent, INodeType, MetadataType, XAttr
from hdfs_events.validation import (
    INT_FIELD_RANGES,
    MAX_ACL_ENTRIES,
    MAX_COMPONENT_BYTES,
    MAX_NAME_CHARS,
    MAX_PATH_CHARS,
    MAX_PATH_DEPTH,
    MAX_XATTR_BYTES,
    MAX_XATTRS,
    line_problem,
)
from tests.integration.glue.frames import raw_lines
from tests.integration.glue.generated_events import generated_events

TS = 1_421_139_600_000


def _agent_and_metadata_events() -> list[HdfsEvent]:
    return [
        HdfsEvent("c1", 90, 0, EventType.GAP, "/", timestamp=TS, gap_end_txid=120),
        HdfsEvent("c1", 121, 0, EventType.SNAPSHOT, "/data/a", timestamp=TS,
                  inode_type=INodeType.DIRECTORY, owner="hdfs", group="hadoop", perms="1777",
                  mtime=TS, atime=TS),
        HdfsEvent("c1", 122, 0, EventType.METADATA, "/data/a/f", metadata_type=MetadataType.ACLS,
                  acls=("user:alice:rw-", "default:group::r-x")),
        HdfsEvent("c1", 123, 0, EventType.METADATA, "/data/a/f",
                  metadata_type=MetadataType.XATTRS, xattrs_removed=False,
                  xattrs=(XAttr("USER", "tag", "0x3132"), XAttr("TRUSTED", "t", None))),
        HdfsEvent("c1", 124, 0, EventType.CREATE, "/data/a/l", timestamp=TS,
                  inode_type=INodeType.SYMLINK, ctime=TS, owner="bob", group="g", perms="0777",
                  symlink_target="/data/a/f", replication=0, overwrite=False, block_size=0,
                  erasure_coded=False),
    ]


def _path_values() -> list[str]:
    """Paths at and one past each limit of validation.check_path, and broken ones."""
    part = "d" * MAX_COMPONENT_BYTES
    return [
        "", "relative/x", "/", "/a//b", "/a/./b", "/a/../b", "/a/b/", "/a/.", "/a/..", "/a/.b",
        "/a/\x00b", "/a/b:c", "/a/\ud800b", "/data/\u202eexe.gpj", "/data/\uff0f..\uff0fetc",
        "/" + part, "/" + part + "d", "/" + "\u00e9" * (MAX_COMPONENT_BYTES // 2),
        "/" + "\u00e9" * (MAX_COMPONENT_BYTES // 2 + 1),
        "/" + "/".join(["d"] * MAX_PATH_DEPTH), "/" + "/".join(["d"] * (MAX_PATH_DEPTH + 1)),
        # Parent directories of ~2,000 and ~2,250 bytes: the index key's 2,048-byte bound.
        "/" + "/".join([part] * 7) + "/" + "d" * 200 + "/f",
        "/" + "/".join([part] * 8) + "/f", "/" + "/".join([part] * 9) + "/f",
        "/" + "/".join(["d" * 200] * 41),
        "/" + "x" * (MAX_PATH_CHARS - 1), "/" + "/".join(["x" * 99] * (MAX_PATH_CHARS // 100)),
    ]


def _hostile_values() -> list[Any]:
    ints = sorted({v for low, high in INT_FIELD_RANGES.values()
                   for v in (low - 1, low, high, high + 1)} | {2**31 - 1, 2**63, 10**39})
    texts = ["", "x", "a" * MAX_NAME_CHARS, "a" * (MAX_NAME_CHARS + 1), "0644", "0648", "644",
             "create", "CREATE", "GAP", "SNAPSHOT", "FILE", "DIR", "TIMES", "SIZE", "c2",
             "-bad", "c" * 64, "c" * 63, "a\nb", "0644\n"]
    acl = "user:alice:rw-"
    xattr = {"namespace": "USER", "name": "n", "value": "0x31"}
    lists: list[Any] = [
        [], [1], [None], [acl], ["user:rw-"], ["admin::rwx"], ["user::rw-\n"],
        [acl] * MAX_ACL_ENTRIES, [acl] * (MAX_ACL_ENTRIES + 1), ["user:" + "a" * 600 + ":rw-"],
        [xattr], [None], [{**xattr, "namespace": "user"}], [{**xattr, "name": None}],
        [{**xattr, "value": 5}], [{**xattr, "extra": "x"}], [{"namespace": "USER", "name": "n"}],
        [xattr] * MAX_XATTRS, [xattr] * (MAX_XATTRS + 1),
        [{**xattr, "name": "n" * MAX_XATTR_BYTES}], [{**xattr, "name": "n" * (MAX_XATTR_BYTES + 1)}],
        [{**xattr, "value": "0x" + "31" * (MAX_XATTR_BYTES + 1)}],
    ]
    return [None, True, False, 1.5, 1e3, {"a": 1}, *ints, *texts, *_path_values(), *lists]


def _doc(event: HdfsEvent) -> dict[str, Any]:
    return json.loads(event.to_json())


def _canonical(doc: dict[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


def corpus(events: list[HdfsEvent]) -> list[str]:
    docs = [_doc(e) for e in events]
    lines = [_canonical(d) for d in docs]
    bases = {d["type"]: d for d in docs}  # one event of each type
    for base in bases.values():
        for name in (*FIELDS, "extra"):
            if name in base:
                lines.append(_canonical({k: v for k, v in base.items() if k != name}))
            for value in _hostile_values():
                doc = {**base, name: value}
                lines.append(_canonical(doc))
                lines.append(json.dumps(doc))
    good = lines[0]
    lines += [
        good[:-1] + ',"txid":5}', good[:-1] + ',"extra":null}', " " + good, good + "\r",
        good.replace('"index":0', '"index":NaN'), good.replace('"index":0', '"index":-0'),
        good.replace('"index":0', '"index":00'), good.replace('"index":0', '"index":0e0'),
        good.replace('"index":0', '"index":' + "9" * 5000), good.replace('"c1"', "'c1'"),
        good.replace('"index":0', '"index":0,"xattrs":' + "[" * 20 + "]" * 20),
        good.replace('"cluster":"c1"', '"cluster":"\\u0063\\u0031"'),
        good.replace('"path":"', '"path":"\\ud800'), "[]", "{}", "null", "{not json", "1",
    ]
    return lines


def _frame(spark, lines: list[str]):
    return raw_lines(spark, [(_raw_cluster(line), line.encode("utf-8", "surrogatepass"))
                             for line in lines])


def _raw_cluster(line: str) -> str:
    """The partition's cluster is the line's own: the partition rule is not what is compared."""
    try:
        cluster = json.loads(line).get("cluster")
    except (ValueError, AttributeError):
        return "c1"
    return cluster if isinstance(cluster, str) else "c1"


def _utf8(line: str) -> bool:
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def test_the_job_rejects_what_line_problem_rejects_naming_the_same_field(
        spark, sample_events) -> None:
    events = [*sample_events, *_agent_and_metadata_events(),
              *generated_events("c1", count=200, start_ms=TS, span_ms=3_600_000)]
    lines = [x for x in dict.fromkeys(corpus(events)) if x.strip()]
    parsed = with_reasons(classify_lines(
        _frame(spark, lines).withColumn("n", F.monotonically_increasing_id())))
    reasons = [r["reason"] for r in parsed.orderBy("n").collect()]
    assert len(reasons) == len(lines)

    dropped_optional = {f"missing key(s) {n}" for n in FIELDS
                        if n not in REQUIRED and n not in ADDED_FIELDS}
    rejected, wrong = 0, []
    for line, reason in zip(lines, reasons, strict=True):
        expected = line_problem(line) if _utf8(line) else NOT_UTF8
        if expected is None:
            # The lake's own stricter rule: every key of the contract present.
            agrees = reason is None or reason in dropped_optional
        elif reason == "line is not a JSON object":  # a rule on the whole line, not a field
            agrees = expected.startswith(("line ", "event must be a JSON object"))
        else:
            agrees = reason == expected
        if not agrees:
            wrong.append((line[:200], reason, expected))
        rejected += expected is not None
    assert not wrong, wrong[:20]
    assert rejected > 1000  # the corpus breaks things, not only good lines


def test_canonical_lines_breaking_a_rule_are_caught_by_sql_alone(spark, sample_events) -> None:
    """The SQL rules themselves (not the canonical test) decide on canonical lines: every
    canonical line line_problem rejects is flagged by contract_holds, and every real event is
    clean, so the Python check does not run on good data."""
    events = [*sample_events, *_agent_and_metadata_events()]
    lines = [x for x in dict.fromkeys(corpus(events)) if _utf8(x)]
    parsed = parse_canonical_line(F.col("value"))
    frame = _frame(spark, lines).withColumn(
        "event", F.coalesce(parsed["event"], F.from_json("value", RAW_LINE_SCHEMA))).select(
        "value", parsed["not_canonical"].isNull().alias("canonical"),
        contract_holds(F.col("event")).alias("holds"))
    judged = {r["value"]: (r["canonical"], r["holds"]) for r in frame.collect()}

    canonical_rejected = 0
    for line in lines:
        is_canonical, holds = judged[line]
        if is_canonical and line_problem(line) is not None:
            assert not holds, line[:300]
            canonical_rejected += 1
    assert canonical_rejected > 500
    assert all(judged[e.to_json()] == (True, True) for e in events)


# --- the JVM parser against the Python contract, on generated lines -----------------------------

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_LONG = st.integers(-(2**63), 2**63 - 1)


@st.composite
def _event_docs(draw: st.DrawFn) -> dict[str, Any]:
    """A contract event's dict, valid or near it: text with control characters, non-ASCII and
    quotes; integers over a Java long's whole range."""
    typ = draw(st.sampled_from(list(EventType)))
    event = HdfsEvent(
        "c1", draw(st.integers(0, 2**63 - 1)), draw(st.integers(0, 3)), typ,
        "/" + draw(_TEXT).replace("/", "_"), timestamp=draw(st.none() | st.integers(0, 2**41)),
        inode_type=draw(st.none() | st.sampled_from(list(INodeType))),
        ctime=draw(st.none() | _LONG), owner=draw(st.none() | _TEXT),
        perms=draw(st.none() | st.sampled_from(["0644", "1777", "644"])),
        overwrite=draw(st.none() | st.booleans()),
        metadata_type=draw(st.none() | st.sampled_from(list(MetadataType))),
        acls=draw(st.none() | st.lists(st.sampled_from(["user:a:rw-", "group::r-x", "x:y"]),
                                       max_size=3).map(tuple)),
        xattrs=draw(st.none() | st.lists(st.builds(XAttr, st.sampled_from(["USER", "RAW", "x"]),
                                                   _TEXT, st.none() | _TEXT),
                                         max_size=2).map(tuple)),
        dst_path=draw(st.none() | st.just("/d/e")),
        gap_end_txid=draw(st.none() | st.integers(0, 2**63 - 1)))
    return _doc(event)


def _near_canonical(doc: dict[str, Any], how: str, at: int) -> bytes:
    """The canonical line of `doc`, or one changed the way `how` names (at: which place)."""
    line = _canonical(doc)
    keys = list(doc)
    if how == "space":  # valid JSON, one space more
        commas = [i for i, c in enumerate(line) if c == ","] or [len(line) - 1]
        i = commas[at % len(commas)]
        line = line[:i + 1] + " " + line[i + 1:]
    elif how == "reordered":
        i = at % (len(keys) - 1)
        keys[i], keys[i + 1] = keys[i + 1], keys[i]
        line = _canonical({k: doc[k] for k in keys})
    elif how == "float":  # 5 -> 5.0
        line = line.replace(f'"txid":{doc["txid"]},', f'"txid":{doc["txid"]}.0,')
    elif how == "ascii_escapes":  # \u00e9 for é, as json.dumps writes by default
        line = json.dumps(doc, separators=(",", ":"))
    elif how == "escaped_letter":
        line = line.replace('"path":"/', '"path":"\\u002f', 1)
    elif how == "upper_hex":  # \u001F, as Spark's (Jackson's) writer escapes, not Python's
        line = re.sub(r"\\u00(1[a-f])", lambda m: "\\u00" + m.group(1).upper(), line)
    elif how == "lone_surrogate":
        line = line.replace('"path":"/', '"path":"/\\ud800', 1)
    elif how == "trailing_space":
        line += " "
    elif how == "duplicate_key":
        line = line[:-1] + f',"index":{doc["index"]}}}'
    elif how == "missing_key":
        line = _canonical({k: v for k, v in doc.items() if k != keys[at % len(keys)]})
    elif how == "not_utf8":
        return line.encode().replace(b'"path":"/', b'"path":"/\xff', 1)
    return line.encode("utf-8", "surrogatepass")


_CHANGES = ("none", "space", "reordered", "float", "ascii_escapes", "escaped_letter",
            "upper_hex", "lone_surrogate", "trailing_space", "duplicate_key", "missing_key",
            "not_utf8")


def _python_canonical(line: bytes) -> dict[str, Any] | None:
    """The event of a line the contract's writer produced from values Spark can hold (every
    key in order, integers within a Java long, each value of its field's JSON type), else None:
    what parse_canonical_line must decide."""
    try:
        doc = json.loads(line.decode("utf-8"), object_pairs_hook=_no_duplicate_keys)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict) or list(doc) != list(FIELDS) or _canonical(doc).encode(
            "utf-8", "surrogatepass") != line:
        return None
    return doc if all(_fits(doc[f.name], f.dataType) for f in RAW_LINE_SCHEMA.fields
                      if f.name in doc) else None


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    if len({k for k, _ in pairs}) != len(pairs):
        raise ValueError("duplicate key")
    return dict(pairs)


def _fits(value: Any, spark_type: T.DataType) -> bool:
    if value is None:
        return True
    if isinstance(spark_type, T.StringType):
        return isinstance(value, str) and _utf8(value)
    if isinstance(spark_type, T.LongType):
        return type(value) is int and -(2**63) <= value < 2**63
    if isinstance(spark_type, T.BooleanType):
        return isinstance(value, bool)
    if isinstance(spark_type, T.ArrayType):
        return isinstance(value, list) and all(
            v is not None and _fits(v, spark_type.elementType) for v in value)
    assert isinstance(spark_type, T.StructType)
    return (isinstance(value, dict) and list(value) == spark_type.fieldNames()
            and all(_fits(value[f.name], f.dataType) for f in spark_type.fields))


def _as_python(value: Any) -> Any:
    if isinstance(value, Row):
        return {k: _as_python(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [_as_python(v) for v in value]
    return value


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])  # no shrinking: a Spark job each
@given(st.lists(st.tuples(_event_docs(), st.sampled_from(_CHANGES), st.integers(0, 50)),
                min_size=40, max_size=40))
def test_the_jvm_parser_decides_and_reads_as_the_python_contract(spark, cases) -> None:
    """On generated events, canonical and changed a little (a space, a reordered key, 1.0 for 1,
    escaped unicode, a lone surrogate, a bad byte...): parse_canonical_line proves a line
    canonical exactly when the contract's writer would write it, reads the same values as
    Python's json, and the job then gives every line line_problem's decision and reason."""
    lines = [_near_canonical(doc, how, at) for doc, how, at in cases]
    frame = raw_lines(spark, [("c1", x) for x in lines]).withColumn(
        "n", F.monotonically_increasing_id())
    parsed = frame.select("n", parse_canonical_line(F.col("value")).alias("p")).orderBy("n")
    reasons = [r["reason"] for r in with_reasons(classify_lines(frame)).orderBy("n").collect()]

    dropped_optional = {f"missing key(s) {n}" for n in FIELDS
                        if n not in REQUIRED and n not in ADDED_FIELDS}
    for line, row, reason in zip(lines, parsed.collect(), reasons, strict=True):
        expected_doc = _python_canonical(line)
        event = row["p"]["event"]
        assert (row["p"]["not_canonical"] is None) == (expected_doc is not None), (line, row)
        if expected_doc is not None:
            got = _as_python(event)
            assert got.pop(CORRUPT_RECORD) is None
            assert got == expected_doc, line
        try:
            expected = line_problem(line.decode("utf-8", "surrogatepass")) if _utf8(
                line.decode("utf-8", "surrogatepass")) else NOT_UTF8
        except UnicodeDecodeError:
            expected = NOT_UTF8
        if expected is None:
            assert reason is None or reason in dropped_optional, (line, reason)
        elif reason == "line is not a JSON object":
            assert expected.startswith(("line ", "event must be a JSON object")), (line, expected)
        else:
            assert reason == expected, line
