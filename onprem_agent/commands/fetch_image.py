"""`hdfs-events-agent fetch-image --config agent.toml`: the NameNode's latest checkpoint, fetched
as `hdfs dfsadmin -fetchImage` fetches it, into the lake bucket ([fsimage] in agent.toml;
docs/fsimage.md, "The agent's fetch"). Prints one line: txid, bytes, seconds, S3 URI.

Exit 0 when the image is in the lake (uploaded now or already there), 1 on a failure, 2 on a
configuration error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, required=True, help="agent.toml")
    parser.add_argument("--cluster", default=None, help="override [cluster]")


def run(args: argparse.Namespace) -> int:
    from onprem_agent.agent_toml import ConfigError
    from onprem_agent.config import load_config
    from onprem_agent.image_fetch import FSIMAGE
    from onprem_agent.live.settings import load_live_settings

    try:
        config = load_config(args.config, {"cluster": args.cluster})
        live = load_live_settings(config)
        settings = config.read(FSIMAGE)
        if live.hdfs.uri is None:
            raise ConfigError(f"{config.path.name}: [hdfs] uri: required for `fetch-image`")
    except ConfigError as exc:
        print(f"hdfs-events-agent fetch-image: {exc}", file=sys.stderr)
        return 2
    import boto3
    from botocore.config import Config

    from onprem_agent.image_fetch import ImageFetchError, LakeImages, fetch_image
    from onprem_agent.live.hadoop import KerberosError, KerberosLogin, hadoop_configuration
    from onprem_agent.live.jvm import JvmError, resolve_classpath, start_jvm
    from onprem_agent.sync.replica import ChecksumMismatch

    try:
        start_jvm(resolve_classpath(explicit=live.hdfs.classpath, conf_dir=live.hdfs.conf_dir),
                  max_heap=live.hdfs.max_heap)
        # DFSAdmin finds the NameNode in fs.defaultFS, as `hdfs dfsadmin` does.
        conf = hadoop_configuration({"fs.defaultFS": live.hdfs.uri})
        if live.kerberos.enabled:
            KerberosLogin(live.kerberos.principal, live.kerberos.keytab, conf)
        s3 = boto3.client("s3", config=Config(retries={"mode": "standard", "max_attempts": 5}))
        lake = LakeImages(s3, settings.bucket, config.cluster, settings.part_size)
        fetched = fetch_image(conf, lake, settings.download_dir)
    except (JvmError, KerberosError, ImageFetchError, ChecksumMismatch) as exc:
        print(f"hdfs-events-agent fetch-image: {exc}", file=sys.stderr)
        return 1
    print(fetched.line())
    return 0
