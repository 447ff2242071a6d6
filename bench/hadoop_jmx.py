"""The Hadoop daemons' own metrics, read as a bench reads them: the JMX servlet (`/jmx?qry=`)
of the NameNode named by a client configuration's dfs.namenode.http-address, and of any other
daemon by its HTTP address."""

from __future__ import annotations

import json
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any


def namenode_http(conf_dir: Path) -> str:
    """http://host:port of the NameNode the client configuration in `conf_dir` names."""
    site = ET.parse(conf_dir / "hdfs-site.xml").getroot()
    for prop in site.iter("property"):
        if prop.findtext("name", "").startswith("dfs.namenode.http-address"):
            return f"http://{prop.findtext('value', '')}"
    raise SystemExit(f"no dfs.namenode.http-address in {conf_dir / 'hdfs-site.xml'}")


def beans(base: str, query: str) -> list[dict[str, Any]]:
    """The beans of `base`'s JMX servlet that match `query`."""
    with urllib.request.urlopen(f"{base}/jmx?qry={query}", timeout=30) as answer:
        return list(json.load(answer)["beans"])
