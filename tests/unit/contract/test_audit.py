"""The audit-line parser on lines Hadoop 3.3.4's NameNode wrote itself (data/hdfs-audit.log:
the kit's NameNode, log4j layout `%d{ISO8601} %p %c{2}: %m%n`, users root, alice and bob through
remote-user UGIs, alice denied a create in bob's 0700 directory)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from hdfs_events.audit import AuditRecord, LineSource, TimeFormat, parse_line
from hdfs_events.lake_layout import audit_object_key

LOG = (Path(__file__).parent / "data" / "hdfs-audit.log").read_text().splitlines()
SOURCE = LineSource("nn1.example.com", "1234-00ff", 0)


DEFAULT_LAYOUT = TimeFormat()


def parsed(line: str, time_format: TimeFormat = DEFAULT_LAYOUT) -> AuditRecord:
    return parse_line(line, "prod", SOURCE, time_format)


def by_cmd(cmd: str, **match: object) -> AuditRecord:
    records = [parsed(line) for line in LOG]
    (record,) = [r for r in records if r.cmd == cmd
                 and all(getattr(r, k) == v for k, v in match.items())]
    return record


def test_every_line_the_namenode_wrote_parses() -> None:
    assert [parsed(line).reason for line in LOG] == [None] * len(LOG)


def test_a_create_gives_who_from_where_what_and_when() -> None:
    r = by_cmd("create", src="/user/alice/a")
    assert (r.allowed, r.user, r.auth, r.real_user, r.ip, r.dst, r.perm, r.proto) == (
        True, "alice", "SIMPLE", None, "127.0.0.1", None, "alice:supergroup:rw-r--r--", "rpc")
    assert r.time == int(datetime(2026, 11, 26, 12, 31, 13, 87000, UTC).timestamp() * 1000)
    assert r.identity == ("prod", "nn1.example.com", "1234-00ff", 0)


def test_rename_with_options_is_a_rename_and_keeps_its_options() -> None:
    r = by_cmd("rename", options="[OVERWRITE]")
    assert (r.src, r.dst) == ("/user/alice/b", "/user/alice/c")
    assert by_cmd("rename", options=None).dst == "/user/alice/b"


def test_escaped_names_come_back_as_hdfs_holds_them() -> None:
    # escapeJava: the tab in the name is "\t" and the é "\u00E9" in the log.
    assert by_cmd("create", src="/user/alice/tab\tné").allowed is True


def test_a_denied_create_is_allowed_false_with_no_result_permission() -> None:
    r = by_cmd("create", allowed=False)
    assert (r.user, r.src, r.perm) == ("alice", "/user/bob/x", None)


def test_a_proxy_user_is_the_user_and_the_impersonator_the_real_user() -> None:
    # UserGroupInformation.toString() of a proxy user: "<user> (auth:PROXY) via <real> (...)".
    line = LOG[-1].replace("ugi=alice (auth:SIMPLE)",
                           "ugi=alice@EXAMPLE.COM (auth:PROXY) via oozie/nn1@EXAMPLE.COM "
                           "(auth:KERBEROS)")
    r = parsed(line)
    assert (r.user, r.auth, r.real_user, r.real_auth) == (
        "alice@EXAMPLE.COM", "PROXY", "oozie/nn1@EXAMPLE.COM", "KERBEROS")


def test_caller_context_and_a_resolved_client_address() -> None:
    line = (LOG[-1].replace("ip=/127.0.0.1", "ip=edge1.example.com/10.0.0.7")
            + "\tcallerContext=mr_attempt_1\twith a tab:c2lnbmF0dXJl")
    r = parsed(line)
    assert (r.ip, r.caller_context) == ("10.0.0.7", "mr_attempt_1\twith a tab:c2lnbmF0dXJl")


def test_time_is_read_in_the_namenodes_zone() -> None:
    paris = parsed(LOG[1], TimeFormat(zone=ZoneInfo("Europe/Paris")))
    assert parsed(LOG[1]).time - paris.time == 3600 * 1000  # UTC+1 in November


def test_another_layout_reads_with_its_own_time_format() -> None:
    line = "26/11/2026 12:31:13 " + LOG[1].split(" ", 2)[2]
    assert parsed(line, TimeFormat(strptime="%d/%m/%Y %H:%M:%S")).time == int(
        datetime(2026, 11, 26, 12, 31, 13, tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(("line", "reason"), [
    ("2026-11-26 12:31:13,087 INFO FSNamesystem.audit: Initializing audit logger",
     "allowed: missing"),
    (LOG[1].replace("allowed=true", "allowed=maybe"), "allowed: 'maybe' is not true or false"),
    (LOG[1].replace("\tcmd=mkdirs", ""), "cmd: missing"),
    (LOG[1].replace("ugi=root (auth:SIMPLE)", "ugi=root"), "ugi: 'root' is not"),
    ("yesterday " + LOG[1].split(" ", 2)[2], "time: "),
    (LOG[1].replace("src=/user/alice", "src=/user/\\q"), "src: '/user/\\\\q' is not a Java"),
])
def test_a_bad_line_is_a_record_with_the_raw_line_and_a_reason(line: str, reason: str) -> None:
    r = parsed(line)
    assert r.raw == line and r.reason is not None and r.reason.startswith(reason)
    assert r.identity == ("prod", "nn1.example.com", "1234-00ff", 0) and r.cmd is None


def test_every_record_has_one_json_shape() -> None:
    good, bad = parsed(LOG[1]), parsed("not an audit line")
    assert list(good.to_json()) == list(bad.to_json())
    assert bad.to_json()["reason"] and good.to_json()["reason"] is None


def test_the_object_key_is_the_cluster_prefix_hour_and_line_identity() -> None:
    t = int(datetime(2026, 11, 26, 23, 59, 59, tzinfo=UTC).timestamp() * 1000)
    assert audit_object_key("prod", t, "nn1.example.com", "1234-00ff", 20480) == (
        "raw-audit/cluster=prod/dt=2026-11-26/hour=23/nn1.example.com-1234-00ff-20480.jsonl.gz")
