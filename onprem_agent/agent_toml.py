"""agent.toml, read once: how a component declares its section, and the one reader that checks
every section a command needs against its declaration.

A section is a `Section`: its keys (type, bounds, choices, default, parser; `Key`) and a `build`
function that makes the section's typed object from the checked values and holds the few checks
that span keys. `AgentToml` is the file loaded once (TOML, command-line overrides, secrets
refused); `read(section)` checks a section the first time it is asked for. Every mistake is a
ConfigError naming the file, the section and the key, and an unknown key is an error, so a typo
never silently falls back to a default.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# Keys refused anywhere in the file (any section, any depth), by exact name or by these parts.
_SECRET_KEY = re.compile(
    r"(^|_)(secret|password|passwd|token|credentials?)($|_)|access_key|secret_key|session_token"
)
# Connection settings that belong to the AWS chain, not to this file.
_AWS_CHAIN_KEYS = frozenset({"region", "region_name", "endpoint", "endpoint_url", "profile",
                             "aws_profile", "aws_region"})
_KIND_NAMES = {str: "a string", int: "an integer", bool: "true or false"}


class ConfigError(ValueError):
    """A configuration mistake; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class Key:
    """One key of a section.

    `kind` is str, int, bool or list (a list of non-empty strings, read as a tuple). An empty
    string is as if the key were not given (`alert_topic_arn = ""`: none). `parse` turns the
    value (each item of a list) into what the section holds; a ValueError it raises says what is
    wrong. `required`: True, or what the key is (said after "required").
    """

    kind: type
    default: Any = None
    low: int | None = None
    high: int | None = None
    one_of: tuple[str, ...] = ()  # a string's value, or each item of a list
    parse: Callable[[Any], Any] | None = None
    required: bool | str = False


@dataclass(frozen=True, slots=True)
class Section(Generic[T]):
    """A table of agent.toml: its keys and how its typed object is built from them. `absent`:
    what the error says when a command needs the section and the file has none ("": the
    section may be left out, every key then takes its default)."""

    name: str  # "" for the file's top-level keys
    keys: Mapping[str, Key]
    build: Callable[[Values], T]
    absent: str = ""


class Values:
    """The checked keys of one section (defaults filled in), handed to its `build`."""

    def __init__(self, toml: AgentToml, section: Section[Any], values: dict[str, Any],
                 given: frozenset[str]) -> None:
        self._toml, self._section, self._values = toml, section, values
        self.given = given  # the keys the file (or an override) set

    @property
    def present(self) -> bool:
        """The file has the section, with at least one key."""
        return self._toml.has(self._section)

    @property
    def file(self) -> Path:
        return self._toml.path

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def error(self, key: str, message: str) -> ConfigError:
        return self._toml.error(_where(key, self._section.name), message)

    def path(self, key: str) -> Path | None:
        """The key's file path; a relative one is relative to the config file, so the agent
        works from any current directory."""
        value = self._values[key]
        if value is None:
            return None
        raw = Path(value).expanduser()
        return raw if raw.is_absolute() else self.file.parent / raw

    def read(self, section: Section[T]) -> T:
        """Another section of the same file (a default taken from [filter], say)."""
        return self._toml.read(section)


class AgentToml:
    """The config file, loaded once; each section is checked when it is first read."""

    def __init__(self, path: Path, doc: Mapping[str, Any],
                 overrides: Mapping[str, object] | None = None) -> None:
        self.path = path
        self.doc = _apply_overrides(doc, overrides or {}, path)
        self._read: dict[str, Any] = {}
        self._refuse_secrets(self.doc, "")

    @classmethod
    def load(cls, path: Path, overrides: Mapping[str, object] | None = None) -> AgentToml:
        """`overrides` ("cluster", "sqs.queue_url", ...) replace file values, as command-line
        flags do; None values are ignored (the flag was not given)."""
        try:
            with path.open("rb") as f:
                doc = tomllib.load(f)
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such config file") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        return cls(path, doc, overrides)

    def error(self, where: str, message: str) -> ConfigError:
        return ConfigError(f"{self.path.name}: {where}: {message}" if where
                           else f"{self.path.name}: {message}")

    def refuse_unknown_sections(self, sections: tuple[str, ...], keys: tuple[str, ...]) -> None:
        known = sorted((*keys, *sections))
        for name, value in self.doc.items():
            if name not in sections and name not in keys:
                raise self.error(name, f"unknown {'section' if isinstance(value, dict) else 'key'}"
                                       f"; known: {', '.join(known)}")
            if name in sections and not isinstance(value, dict):
                raise self.error(f"[{name}]", "must be a table")

    def has(self, section: Section[Any]) -> bool:
        return bool(self.doc.get(section.name))

    def read(self, section: Section[T]) -> T:
        if section.name not in self._read:
            self._read[section.name] = section.build(self._check(section))
        value: T = self._read[section.name]
        return value

    def _check(self, section: Section[Any]) -> Values:
        if section.absent and not self.has(section):
            raise self.error(f"[{section.name}]", section.absent)
        table = self.doc if not section.name else self.doc.get(section.name, {})
        if not isinstance(table, dict):
            raise self.error(f"[{section.name}]", "must be a table")
        values = {key: spec.default for key, spec in section.keys.items()}
        given = set()
        for key, value in table.items():
            if not section.name and isinstance(value, dict):
                continue  # a section, not a top-level key
            where = _where(key, section.name)
            spec = section.keys.get(key)
            if spec is None:
                raise self.error(where, f"unknown key; known: {', '.join(section.keys)}")
            if value == "":
                continue
            values[key] = self._value(spec, value, where)
            given.add(key)
        for key, spec in section.keys.items():
            if spec.required and key not in given:
                what = f" ({spec.required})" if isinstance(spec.required, str) else ""
                raise self.error(_where(key, section.name), f"required{what}")
        return Values(self, section, values, frozenset(given))

    def _value(self, spec: Key, value: Any, where: str) -> Any:
        if spec.kind is list:
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise self.error(where, f"must be a list of non-empty strings, got {value!r}")
            for item in value:
                if spec.one_of and item not in spec.one_of:
                    raise self.error(where, f"{item!r} is not one of {', '.join(spec.one_of)}")
            return tuple(self._parsed(spec, item, where) for item in value)
        # TOML booleans are not integers here, whatever Python's bool subclassing says.
        if not isinstance(value, spec.kind) or (spec.kind is int and isinstance(value, bool)):
            raise self.error(where, f"must be {_KIND_NAMES[spec.kind]}, got {value!r}")
        if spec.low is not None and value < spec.low:
            raise self.error(where, f"must be >= {spec.low}")
        if spec.high is not None and value > spec.high:
            raise self.error(where, f"must be <= {spec.high}")
        if spec.one_of and value not in spec.one_of:
            raise self.error(where, f"must be one of {', '.join(spec.one_of)}, got {value!r}")
        return self._parsed(spec, value, where)

    def _parsed(self, spec: Key, value: Any, where: str) -> Any:
        if spec.parse is None:
            return value
        try:
            return spec.parse(value)
        except ValueError as exc:
            raise self.error(where, str(exc)) from None

    def _refuse_secrets(self, table: Mapping[str, Any], prefix: str) -> None:
        for key, value in table.items():
            where = _where(key, prefix)
            lowered = key.lower()
            if _SECRET_KEY.search(lowered):
                raise self.error(where, "secrets are never read from the config file; use the "
                                        "standard AWS credential chain (AWS_PROFILE, instance "
                                        "or SSO roles, environment variables)")
            if lowered in _AWS_CHAIN_KEYS:
                raise self.error(where, "region, endpoint and profile come from the standard "
                                        "AWS chain (AWS_REGION, AWS_ENDPOINT_URL, "
                                        "AWS_ENDPOINT_URL_SQS, AWS_PROFILE), not from this file")
            if isinstance(value, dict):
                self._refuse_secrets(value, f"{prefix}.{key}" if prefix else key)


def _where(key: str, section: str = "") -> str:
    return f"[{section}] {key}" if section else key


def _apply_overrides(doc: Mapping[str, Any], overrides: Mapping[str, object],
                     path: Path) -> dict[str, Any]:
    merged: dict[str, Any] = {k: dict(v) if isinstance(v, dict) else v for k, v in doc.items()}
    for dotted, value in overrides.items():
        if value is None:
            continue
        section, _, key = dotted.rpartition(".")
        if section:
            table = merged.setdefault(section, {})
            if not isinstance(table, dict):
                raise ConfigError(f"{path.name}: [{section}]: must be a table")
            table[key] = value
        else:
            merged[key] = value
    return merged
