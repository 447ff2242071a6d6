"""The Glue resources of a synthesized Analytics template, made real on a moto server.

moto's CloudFormation skips AWS::Glue::Database, ::Table and ::Job (tests/kit/local_cloud.py),
so a test that runs the jobs or queries the tables creates them from the same template here, never
from a hand-made copy: the databases and tables through the Glue API, and each job's script
arguments as Glue would hand them to the entry script.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# Read by Glue itself, never passed on to the script (AWS Glue "Job parameters", the special
# ones the template sets; --conf: the JVMs' settings, which a local session takes from
# glue_jobs.runtime.job_conf).
GLUE_OWN_ARGUMENT = re.compile(r"--(job-language|extra-py-files|extra-jars|conf|enable-.*)")


def pseudo_parameters(account: str, region: str) -> dict[str, str]:
    """CloudFormation's pseudo parameters in the account and region a stack is deployed to."""
    return {"AWS::AccountId": account, "AWS::Region": region, "AWS::Partition": "aws"}


def resolve(value: Any, refs: Mapping[str, str]) -> Any:
    """`value` with the intrinsic functions the Analytics template's Glue resources use (Ref,
    Fn::Join, Fn::Sub, Fn::ImportValue of a name) evaluated against `refs`; any other
    refuses, naming it."""
    if isinstance(value, dict) and len(value) == 1:
        ((function, arg),) = value.items()
        if function == "Ref":
            return refs[arg]
        if function == "Fn::Join":
            return arg[0].join(str(resolve(part, refs)) for part in arg[1])
        if function == "Fn::Sub":
            return re.sub(r"\$\{([^}]+)\}", lambda m: refs[m.group(1)], arg)
        if function == "Fn::ImportValue" and isinstance(arg, str):
            return refs[import_ref(arg)]
        if function.startswith("Fn::"):
            raise KeyError(f"cannot resolve {function} in a Glue resource")
    if isinstance(value, dict):
        return {k: resolve(v, refs) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, refs) for v in value]
    return value


def import_ref(export: str) -> str:
    """The key under which `refs` holds the value another stack exports as `export`."""
    return f"Fn::ImportValue:{export}"


def exported_names(template: Mapping[str, Any]) -> dict[str, str]:
    """`refs` entries for what `template` exports by a Ref of one of its resources: the
    resource's logical id stands in for the physical name CloudFormation would give it (the
    caller deploys none of that stack's resources, it only needs every argument resolved)."""
    return {import_ref(o["Export"]["Name"]): o["Value"]["Ref"]
            for o in template.get("Outputs", {}).values()
            if "Export" in o and isinstance(o["Export"]["Name"], str)
            and isinstance(o["Value"], dict) and set(o["Value"]) == {"Ref"}}


def resources(template: Mapping[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    """The properties of every resource of `type_`, by logical id."""
    return {k: r["Properties"] for k, r in template["Resources"].items() if r["Type"] == type_}


def _string_parameters(table_input: dict[str, Any]) -> dict[str, Any]:
    # CloudFormation hands a JSON `true` in a map of strings to the Glue API as "true".
    parameters = table_input.get("Parameters", {})
    return {**table_input, "Parameters": {k: v if isinstance(v, str) else json.dumps(v)
                                          for k, v in parameters.items()}}


def create_catalog(glue: Any, template: Mapping[str, Any], refs: Mapping[str, str],
                   tables: set[str] | None = None) -> dict[str, str]:
    """Creates the template's Glue databases and its tables (all, or those named in `tables`)
    with the client `glue`; returns `refs` plus each database's logical id -> its name."""
    refs = dict(refs)
    for logical_id, props in resources(template, "AWS::Glue::Database").items():
        database = resolve(props["DatabaseInput"], refs)
        glue.create_database(DatabaseInput=database)
        refs[logical_id] = database["Name"]
    for props in resources(template, "AWS::Glue::Table").values():
        if tables is None or props["TableInput"]["Name"] in tables:
            glue.create_table(DatabaseName=resolve(props["DatabaseName"], refs),
                              TableInput=_string_parameters(resolve(props["TableInput"], refs)))
    return refs


def job_arguments(template: Mapping[str, Any], refs: Mapping[str, str]) -> dict[str, list[str]]:
    """Each Glue job's name -> the arguments its entry script gets in sys.argv (the template's
    default arguments, less those Glue reads itself)."""
    jobs = {}
    for props in resources(template, "AWS::Glue::Job").values():
        arguments = resolve(props["DefaultArguments"], refs)
        jobs[resolve(props["Name"], refs)] = [
            item for key, value in arguments.items() if not GLUE_OWN_ARGUMENT.fullmatch(key)
            for item in (key, value)]
    return jobs
