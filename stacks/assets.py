"""Code the stacks ship, staged at synth time from the repository (no Docker bundling here).

The consumer Lambda's asset holds exactly the packages `lambdas/` and `hdfs_events/`; Glue
gets its entry scripts as they are plus one zip of `hdfs_events/` and `glue_jobs/` for
`--extra-py-files`. Staging copies only those trees: an asset of the repository root with an
exclude list would make CDK walk (and hash) `.venv`, hundreds of MB of pyspark.
Zips are byte-for-byte reproducible (fixed timestamps, sorted entries), so an unchanged tree
keeps its asset hash and a deploy changes nothing.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import zipfile
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LAMBDA_PACKAGES = ("lambdas", "hdfs_events")
GLUE_LIBRARY_PACKAGES = ("hdfs_events", "glue_jobs")
GLUE_SCRIPTS = {
    "compact": REPO / "glue_jobs" / "compact_events.py",
    "rollups": REPO / "glue_jobs" / "activity_rollups.py",
    "compact_audit": REPO / "glue_jobs" / "compact_audit.py",
    "attribute_events": REPO / "glue_jobs" / "attribute_events.py",
    "namespace_inventory": REPO / "glue_jobs" / "namespace_inventory.py",
}
# Our JVM code for the compaction and the inventory (glue_jobs/jvm), built by `make glue-jar`,
# for --extra-jars.
GLUE_JOB_JAR = REPO / "glue_jobs" / "jvm" / "target" / "hdfs-events-glue.jar"
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", ".pytest_cache", "tests")


class MissingAssetError(FileNotFoundError):
    """A file a stack ships is not in the repository."""


@cache
def _staging_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="hdfs-events-assets-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


@cache
def lambda_package_dir() -> Path:
    """A directory holding `lambdas/` and `hdfs_events/`, the consumer Lambda's code."""
    target = _staging_root() / "ingest-lambda"
    for package in LAMBDA_PACKAGES:
        source = REPO / package
        if not (source / "__init__.py").is_file():
            raise MissingAssetError(f"{source} is not a Python package: the consumer Lambda "
                                    "ships it")
        shutil.copytree(source, target / package, ignore=_SKIP)
    return target


@cache
def glue_library_zip() -> Path:
    """A zip of `hdfs_events/` and `glue_jobs/` for Glue's `--extra-py-files`."""
    target = _staging_root() / "glue-lib" / "hdfs_events_glue.zip"
    target.parent.mkdir(parents=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in GLUE_LIBRARY_PACKAGES:
            for path in sorted((REPO / package).rglob("*.py")):
                if "__pycache__" in path.parts or "tests" in path.parts:
                    continue
                info = zipfile.ZipInfo(path.relative_to(REPO).as_posix(), _ZIP_EPOCH)
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, path.read_bytes())
            for path in sorted((REPO / package).rglob("*.json")):
                info = zipfile.ZipInfo(path.relative_to(REPO).as_posix(), _ZIP_EPOCH)
                info.external_attr = 0o644 << 16
                zf.writestr(info, path.read_bytes())
    return target


def glue_job_jar() -> Path:
    """The jobs' jar; the synth stops with a clear message if it is not built."""
    if not GLUE_JOB_JAR.is_file():
        raise MissingAssetError(f"{GLUE_JOB_JAR.relative_to(REPO)} is not built: run `make "
                                "glue-jar` (the compaction and inventory jobs ship it as --extra-jars)")
    return GLUE_JOB_JAR


def glue_script(job: str) -> Path:
    """The entry script of a Glue job; the synth stops with a clear message if it is missing."""
    path = GLUE_SCRIPTS[job]
    if not path.is_file():
        raise MissingAssetError(f"{path.relative_to(REPO)} is missing: the Glue job '{job}' "
                                "ships it as its script")
    return path
