"""An agent's first start from the fsimage, as the integration test, the scale test and
bench.first_start run it: its agent.toml, and the listing RPCs it must not make."""

from __future__ import annotations

import re
import time
from pathlib import Path

from tests.kit.hadoop.cluster import HdfsCluster
from tests.kit.hadoop.host import TRASH_INTERVAL_MIN
from tests.kit.hadoop.jars import LIB
from tests.kit.live_agent import write_agent_config


def image_agent_config(directory: Path, hdfs: HdfsCluster, *, cluster: str, queue_url: str,
                       first_start: str, bucket: str, inventory_job: str,
                       fsimage_extra: str = "") -> Path:
    """agent.toml for a first start of `first_start` ("fsimage" or "listing") on `hdfs`, its
    [fsimage] section naming the lake `bucket` and the inventory job (the image lands in
    `directory`/download first); `fsimage_extra` adds keys to that section."""
    (directory / "download").mkdir(parents=True, exist_ok=True)
    return write_agent_config(
        directory, cluster=cluster, queue_url=queue_url, uri=hdfs.uri, conf_dir=hdfs.conf_dir,
        hdfs_extra=f'classpath = ["{LIB}/*"]\n', inotify_extra=f'first_start = "{first_start}"\n',
        extra=(f'[fsimage]\nbucket = "{bucket}"\ndownload_dir = "{directory / "download"}"\n'
               f'inventory_job = "{inventory_job}"\n{fsimage_extra}'))


# The NameNode's own trash emptier (fs.trash.interval > 0, tests/kit/hadoop/host.py) wakes at
# every multiple of the interval since the epoch (TrashPolicyDefault.Emptier: ceiling(now,
# interval)) and lists the homes' parent for their trash roots (DistributedFileSystem.
# getTrashRoots(true)): one `listStatus /user` at each full hour, in any test or bench that spans
# one. It is the NameNode's call, not a client's.
_LIST_STATUS = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) .*\tcmd=listStatus\tsrc=([^\t]*)\t",
                          re.MULTILINE)
# How late after its wake-up the emptier's call is still its own: on a loaded 2-core machine
# its thread wakes late, and its first call loads its client's classes (C1 only). A client's
# listing is never `/user` alone (it lists from the covered roots down), so a minute hides none.
_EMPTIER_WAKE_MS = 60_000


def listing_calls(hdfs: HdfsCluster) -> int:
    """Clients' listStatus calls in the NameNode's audit log (every file of its rotation), the
    trash emptier's own left out."""
    return sum(1 for f in hdfs.audit_dir.glob("hdfs-audit.log*")
               for m in _LIST_STATUS.finditer(f.read_text(errors="replace"))
               if not _emptiers(m))


def _emptiers(call: re.Match[str]) -> bool:
    if call[3] != "/user":
        return False
    # The audit log's time is the JVM's local time, this process's too (one machine).
    at_ms = time.mktime(time.strptime(call[1], "%Y-%m-%d %H:%M:%S")) * 1000 + int(call[2])
    return at_ms % (TRASH_INTERVAL_MIN * 60_000) < _EMPTIER_WAKE_MS
