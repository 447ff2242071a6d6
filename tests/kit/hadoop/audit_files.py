"""The audit log the kit's NameNode writes (log4j, under `HdfsCluster.audit_dir`), read as the
agent reads it: every complete line of every file, live and rotated, parsed by the agent's
parser with the identity the agent gives it (file id, byte offset)."""

from __future__ import annotations

from hdfs_events.audit import AuditRecord, LineSource, parse_line
from onprem_agent.audit.logfiles import RotatingLog, file_id
from tests.kit.hadoop.cluster import HdfsCluster

AUDIT_LOG = "hdfs-audit.log"  # the live file's name in the kit's log4j.properties


def audit_records(hdfs: HdfsCluster, cluster: str, host: str) -> list[AuditRecord]:
    records = []
    for path in RotatingLog(hdfs.audit_dir, AUDIT_LOG).files():
        with path.open("rb") as f:
            ident = file_id(f)
            assert ident is not None
            f.seek(0)
            offset = 0
            for raw in f:
                if raw.endswith(b"\n"):
                    records.append(parse_line(raw[:-1].decode(), cluster,
                                              LineSource(host, ident, offset)))
                offset += len(raw)
    return records
