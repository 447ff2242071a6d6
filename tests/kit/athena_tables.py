"""The Glue tables of the synthesized Analytics template, as a SQL engine sees them: Spark SQL's
catalog gets each AWS::Glue::Table of the template (columns, location, partition keys) and the
partitions Athena would read, so a saved query runs over what the stack and the jobs publish,
not over a hand-made copy of either.

Partitions, the way Athena finds them:
- a table with `projection.enabled` has the days its `projection.<key>.*` parameters enumerate
  (Athena's date type: `range` "<first>,<last>" with NOW[+-n UNIT] for a relative end, `format`
  a Java date pattern, `interval` and `interval.unit`), each at its `storage.location.template`
  with `${key}` replaced (or Hive style `<key>=<value>/` under the table location without one);
  Athena ignores the catalog's partitions of such a table;
- any other table has the partitions registered in its catalog (here: the one the compaction
  job published to, glue_jobs.catalog.PartitionCatalog), at the locations registered there.

Athena lists every projected location a query does not rule out, and an empty one adds no rows.
Here a projected partition is registered in Spark only when one listing of the table's prefix
shows objects at its location: the same rows, without thousands of empty listings (a day-by-day
range from 2014 is ~4,700 partitions per table).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pyspark.sql import SparkSession

from glue_jobs.runtime import spark_scheme
from glue_jobs.storage import LakeStore
from tests.kit.glue_template import resolve

PartitionValues = tuple[str, ...]

# Athena's relative date syntax of a projected date range (its partition-projection docs).
_RELATIVE = re.compile(r"\s*NOW\s*(?:([+-])\s*([0-9]+)\s*(YEARS?|MONTHS?|WEEKS?|DAYS?|HOURS?|"
                       r"MINUTES?|SECONDS?)\s*)?", re.IGNORECASE)
# The Java date-pattern letters a day-granular projection uses, as strftime directives.
_JAVA_PATTERN = {"yyyy": "%Y", "MM": "%m", "dd": "%d"}


class UnsupportedProjection(ValueError):
    """A projection setting this emulation does not model; the message names the parameter."""


@dataclass(frozen=True, slots=True)
class GlueTable:
    name: str
    columns: tuple[tuple[str, str], ...]  # (name, Hive type) of the data columns
    partition_keys: tuple[tuple[str, str], ...]
    location: str  # s3://bucket/prefix/
    parameters: Mapping[str, str]

    @property
    def projected(self) -> bool:
        return self.parameters.get("projection.enabled", "").strip().lower() == "true"


def glue_tables(template: Mapping[str, Any], pseudo: Mapping[str, str]) -> dict[str, GlueTable]:
    """Every AWS::Glue::Table of a synthesized template, by table name. `pseudo`: the values of
    AWS::AccountId, AWS::Region... in the account the stack is deployed to."""
    tables = {}
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::Glue::Table":
            continue
        spec = resolve(resource["Properties"]["TableInput"], pseudo)
        sd = spec["StorageDescriptor"]
        tables[spec["Name"]] = GlueTable(
            name=spec["Name"],
            columns=tuple((c["Name"], c["Type"]) for c in sd["Columns"]),
            partition_keys=tuple((k["Name"], k["Type"]) for k in spec.get("PartitionKeys", ())),
            location=sd["Location"],
            parameters={k: str(v) for k, v in spec.get("Parameters", {}).items()})
    return tables


def _bound(text: str, pattern: str, now: datetime) -> datetime:
    m = _RELATIVE.fullmatch(text)
    if m is None:
        return datetime.strptime(text.strip(), pattern).replace(tzinfo=UTC)
    if m[1] is None:
        return now
    unit = m[3].upper().rstrip("S")
    if unit not in ("DAY", "WEEK"):
        raise UnsupportedProjection(f"range offset unit {m[3]!r}: only DAYS and WEEKS modelled")
    days = int(m[2]) * (7 if unit == "WEEK" else 1)
    return now + timedelta(days=days if m[1] == "+" else -days)


def projected_values(table: GlueTable, key: str, now: datetime) -> list[str]:
    """The values Athena projects for `key` at time `now` (date type, day steps)."""
    p = {k.removeprefix(f"projection.{key}."): v for k, v in table.parameters.items()
         if k.startswith(f"projection.{key}.")}
    if p.get("type", "").strip().lower() != "date":
        raise UnsupportedProjection(f"{table.name}: projection.{key}.type {p.get('type')!r}")
    pattern = p["format"]
    for java, strf in _JAVA_PATTERN.items():
        pattern = pattern.replace(java, strf)
    if re.search(r"[A-Za-z]", pattern.replace("%Y", "").replace("%m", "").replace("%d", "")):
        raise UnsupportedProjection(f"{table.name}: projection.{key}.format {p['format']!r}")
    step = int(p.get("interval", "1"))
    if p.get("interval.unit", "DAYS").strip().upper() != "DAYS":
        raise UnsupportedProjection(f"{table.name}: projection.{key}.interval.unit")
    first, last = (_bound(b, pattern, now) for b in p["range"].split(","))
    values, day = [], first.date()
    while day <= last.date():
        values.append(day.strftime(pattern))
        day += timedelta(days=step)
    return values


def projected_location(table: GlueTable, values: Mapping[str, str]) -> str:
    template = table.parameters.get("storage.location.template")
    if template is None:
        return table.location + "".join(f"{k}={values[k]}/" for k, _ in table.partition_keys)
    for key, value in values.items():
        template = template.replace("${" + key + "}", value)
    return template if template.endswith("/") else template + "/"


def projected_partitions(table: GlueTable, now: datetime) -> dict[PartitionValues, str]:
    """Every partition Athena projects for a table of one projected key, with its location."""
    if len(table.partition_keys) != 1:
        raise UnsupportedProjection(f"{table.name}: {len(table.partition_keys)} projected keys")
    ((key, _),) = table.partition_keys
    return {(v,): projected_location(table, {key: v})
            for v in projected_values(table, key, now)}


def _key_of(uri: str) -> tuple[str, str]:
    parts = urlsplit(uri)
    return parts.netloc, parts.path.lstrip("/")


def holding_data(partitions: Mapping[PartitionValues, str], store: LakeStore, bucket: str,
                 prefix: str) -> dict[PartitionValues, str]:
    """The partitions whose location holds an object, from one listing of `prefix`."""
    keys = [o.key for o in store.list_objects(prefix)]
    out = {}
    for values, location in partitions.items():
        where_bucket, where = _key_of(location)
        if where_bucket == bucket and any(k.startswith(where) for k in keys):
            out[values] = location
    return out


@dataclass(frozen=True, slots=True)
class EngineTable:
    """What the engine registered for one Glue table: partitions by values, at locations."""
    table: GlueTable
    partitions: Mapping[PartitionValues, str]


def register(spark: SparkSession, table: GlueTable,
             partitions: Mapping[PartitionValues, str]) -> EngineTable:
    """The table in Spark's session catalog as an external Parquet table at its location, with
    these partitions at their locations (s3:// read through the scheme Spark opens for it)."""
    def spark_uri(uri: str) -> str:
        scheme, rest = uri.split("://", 1)
        return f"{spark_scheme(scheme)}://{rest}"

    columns = ", ".join(f"`{n}` {t}" for n, t in (*table.columns, *table.partition_keys))
    keys = ", ".join(f"`{n}`" for n, _ in table.partition_keys)
    spark.sql(f"DROP TABLE IF EXISTS `{table.name}`")
    spark.sql(f"CREATE TABLE `{table.name}` ({columns}) USING parquet"
              + (f" PARTITIONED BY ({keys})" if keys else "")
              + f" LOCATION '{spark_uri(table.location)}'")
    for values, location in sorted(partitions.items()):
        spec = ", ".join(f"`{n}` = '{v}'" for (n, _), v in
                         zip(table.partition_keys, values, strict=True))
        spark.sql(f"ALTER TABLE `{table.name}` ADD PARTITION ({spec}) "
                  f"LOCATION '{spark_uri(location)}'")
    return EngineTable(table, dict(partitions))


def register_lake(spark: SparkSession, tables: Mapping[str, GlueTable], *, store: LakeStore,
                  bucket: str, registered: Mapping[str, Mapping[PartitionValues, str]],
                  now: datetime) -> dict[str, EngineTable]:
    """Every table: projected ones with the projected partitions holding data, the others with
    `registered[name]` (the partitions a job published to the catalog)."""
    out = {}
    for name, table in tables.items():
        if table.projected:
            table_bucket, prefix = _key_of(table.location)
            if table_bucket != bucket:
                raise ValueError(f"{name}: location {table.location} is not in {bucket}")
            partitions = holding_data(projected_partitions(table, now), store, bucket, prefix)
        else:
            partitions = registered.get(name, {})
        out[name] = register(spark, table, partitions)
    return out


def pinned_to(sql: str, day: date) -> str:
    """The query as it runs on `day`: `current_date` replaced by that day's DATE literal, the
    one rewrite the runner makes (the lake's data is from fixed days, the clock is not)."""
    return re.sub(r"\bcurrent_date\b", f"DATE '{day.isoformat()}'", sql, flags=re.IGNORECASE)


# Trino's parser (`make hadoop` puts its jars there) and the single-file program that runs it.
TRINO_PARSER_JARS = Path(__file__).resolve().parents[2] / ".hadoop" / "trino"
TRINO_PARSER = Path(__file__).with_name("athena_trino_parser.java")


def trino_syntax_errors(queries: Mapping[str, str]) -> dict[str, str]:
    """{query name: Trino's parse error} for the queries Trino's parser refuses."""
    if not any(TRINO_PARSER_JARS.glob("trino-parser-*.jar")):
        raise FileNotFoundError(f"no trino-parser jar in {TRINO_PARSER_JARS}: run `make hadoop`")
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for name, sql in queries.items():
            files[name] = Path(tmp) / f"{len(files)}.sql"
            files[name].write_text(sql)
        done = subprocess.run(["java", "-cp", f"{TRINO_PARSER_JARS}/*", str(TRINO_PARSER),
                               *map(str, files.values())],
                              capture_output=True, text=True, timeout=300, check=False)
    by_file = {str(f): name for name, f in files.items()}
    verdicts = {}  # file -> "" (parsed) or Trino's message
    for line in done.stdout.splitlines():
        status, _, rest = line.partition(" ")
        if status in ("OK", "FAIL"):
            file, _, message = rest.partition(": ")
            verdicts[file] = message if status == "FAIL" else ""
    if set(verdicts) != set(by_file):
        raise RuntimeError(f"Trino's parser exited {done.returncode}: {done.stderr[-2000:]}")
    return {by_file[f]: message for f, message in verdicts.items() if message}
