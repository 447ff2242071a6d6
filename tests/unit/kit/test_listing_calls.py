"""The kit's count of listing RPCs leaves out the NameNode's own trash emptier: with
fs.trash.interval on, it lists /user at every full hour (seen in a 10M bench.first_start that
crossed 02:00, 2026-11-28). The lines are in the audit log's format, copied from that run."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from tests.kit.image_start import listing_calls

LINE = ("{at},143 INFO FSNamesystem.audit: allowed=true\tugi=root (auth:SIMPLE)\t"
        "ip=/127.0.0.1\tcmd=listStatus\tsrc={src}\tdst=null\tperm=null\tproto=rpc\n")


def local(epoch_s: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch_s))


def test_the_emptiers_hourly_listing_is_not_a_clients(tmp_path: Path) -> None:
    hour = (int(time.time()) // 3600) * 3600
    (tmp_path / "hdfs-audit.log").write_text(
        LINE.format(at=local(hour), src="/user")            # the emptier, on the hour
        + LINE.format(at=local(hour + 17 * 60), src="/user")  # a client listing /user
        + LINE.format(at=local(hour), src="/data"))            # a client, on the hour
    assert listing_calls(SimpleNamespace(audit_dir=tmp_path)) == 2
