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
from typing import Any

from pyspark.sql import functions as F

from glue_jobs.compaction import NOT_UTF8, classify_lines, with_reasons
from glue_jobs.contract_sql import canonical, contract_holds
from glue_jobs.schema import ADDED_FIELDS, RAW_LINE_SCHEMA
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
    frame = _frame(spark, lines).withColumn(
        "event", F.from_json("value", RAW_LINE_SCHEMA)).select(
        "value", canonical(F.col("event"), F.col("value")).alias("canonical"),
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
