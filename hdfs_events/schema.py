"""The JSON Schemas (draft 2020-12) of the event record and the message envelope.

The schema files describe the canonical form writers produce (every key present); the tests
check them against the code both ways. Loading needs only the standard library; `validator`
imports jsonschema (a dev dependency) when asked for.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Literal

SchemaName = Literal["event", "envelope"]
EVENT_SCHEMA_ID = "urn:hdfs-events:schema:event:1"
ENVELOPE_SCHEMA_ID = "urn:hdfs-events:schema:envelope:1"


@cache
def load(name: SchemaName) -> dict[str, Any]:
    """The parsed schema document ("event" or "envelope")."""
    text = resources.files("hdfs_events").joinpath("schema", f"{name}.schema.json").read_text(
        encoding="utf-8")
    return json.loads(text)


def validator(name: SchemaName) -> Any:
    """A jsonschema Draft202012Validator for `name`, with the envelope's $ref to the event
    schema resolved locally."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    registry = Registry().with_resources(
        (load(n)["$id"], Resource.from_contents(load(n))) for n in ("event", "envelope"))
    return Draft202012Validator(load(name), registry=registry,
                                format_checker=Draft202012Validator.FORMAT_CHECKER)
