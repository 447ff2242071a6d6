"""One local SparkSession for the whole glue suite (starting one costs 3-10 s), and a lake
writer that lays out raw objects exactly as the consumer Lambda does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from onprem_agent.editlog import read_ops
from onprem_agent.translate import translate_ops
from tests.integration.glue.lake import RawLake


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("glue-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def lake(tmp_path: Path) -> RawLake:
    return RawLake(tmp_path / "lake")


@pytest.fixture(scope="session")
def sample_events(edits_sample: Path) -> list:
    """The real edit log translated by the agent: 32 events of txids 4..87, January 2015."""
    return list(translate_ops(read_ops(edits_sample), "c1"))
