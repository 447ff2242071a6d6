"""An agent's first start from the fsimage, as the integration test, the scale test and
bench.first_start run it: its agent.toml, and the listing RPCs it must not make."""

from __future__ import annotations

from pathlib import Path

from tests.kit.hadoop.cluster import HdfsCluster
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


def listing_calls(hdfs: HdfsCluster) -> int:
    """listStatus calls the NameNode's audit log holds (every file of its rotation)."""
    return sum(f.read_text(errors="replace").count("cmd=listStatus")
               for f in hdfs.audit_dir.glob("hdfs-audit.log*"))
