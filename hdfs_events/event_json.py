"""An event checked against the contract and written as its JSON, in one step: the one writer
of event JSON that the agent (the wire's sparse form) and the consumer (the lake's canonical
line) both use.

`checked_sparse_json(event)` and `checked_canonical_json(event)` raise EventFormatError exactly
when `hdfs_events.validation.check_event` does, with its message, and otherwise return byte for
byte what `HdfsEvent.to_sparse_json()` (the wire's form: the canonical JSON without nulls) and
`HdfsEvent.to_json()` (the lake's line: every field, null where the event has none) write. The
two done separately (check_event's generic walk over every rule, then a generic serialiser)
were most of the agent's packing cost: ~6 us and ~5.5 us an event against ~15 us for the seed
design's whole per-event work (profiled on bench.ship's workload, docs/agent.md "Packing").

Events of one shape (the same fields null) differ only in their values, so each shape gets one
generated function that reads the slots it needs, tests a *sufficient* condition for every rule
of check_event (a cheap, stricter form: an ASCII path of at most 255 characters cannot break a
component, depth, length or index-key limit, see `_path_rule`), and writes the values into an
f-string holding the keys of its fields (the canonical form also its nulls): ints as
int.__repr__ writes them (what json writes), strings through the json module's own C string
encoder, enum members and the cluster name by lookup of their JSON. Each function first tests
that its shape's null fields are null (a present field that is None fails its type rule), so an
event tries the one or two functions its type had before, and only then is its whole shape
read. Whatever the cheap form cannot clear (a non-ASCII or long path, a name with a ".."
component, acls, xattrs, a value of an unexpected type) goes to check_event itself, then the
generic serialiser: the verdict and the bytes stay exact, only slower. A unit test pins both
forms, on real, generated and adversarial events (tests/unit/contract/test_event_json.py).

The generated source holds only slot names, the contract's numeric limits and fixed helper
names, never event data. The condition's parts are generated from the contract's own tables
(`validation.INT_FIELD_RANGES`, `REQUIRED_BY_TYPE`, `NAME_FIELDS`), so a new limit there
reaches this check.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from json.encoder import encode_basestring  # the C encoder json.dumps(ensure_ascii=False) uses
from types import NoneType, UnionType
from typing import Any, get_args, get_type_hints

from hdfs_events.event import FIELDS, REQUIRED, EventType, HdfsEvent
from hdfs_events.ids import CLUSTER_NAME
from hdfs_events.validation import (
    INT_FIELD_RANGES,
    MAX_COMPONENT_BYTES,
    MAX_NAME_CHARS,
    MAX_PARTITION_KEY_BYTES,
    MAX_PATH_CHARS,
    MAX_PATH_DEPTH,
    NAME_FIELDS,
    REQUIRED_BY_TYPE,
    check_event,
)

# A shape's generated function: the sparse JSON of an event of that shape that it clears, else
# None (another shape, or a value the cheap rules cannot clear: the contract's check decides).
_Plan = Callable[[HdfsEvent], str | None]
_MAX_PLANS = 4096  # shapes are few (one or two per event type); bounds a pathological stream
_MAX_CLUSTERS = 1024
# Cluster names check_event accepted, with their JSON: an agent ships one, so the regex runs
# and the name is encoded once, not per event.
_clusters: dict[str, str] = {}

# An ASCII path of at most this many characters keeps every limit of check_path: each
# component and the parent directory are shorter, so a component fits MAX_COMPONENT_BYTES,
# the depth MAX_PATH_DEPTH, the characters MAX_PATH_CHARS, and "<cluster>#<parent>" (a cluster
# name is at most 63 characters) MAX_PARTITION_KEY_BYTES. Longer paths take check_path itself.
_SHORT_PATH = MAX_COMPONENT_BYTES
assert min(MAX_PATH_CHARS, MAX_PATH_DEPTH, MAX_PARTITION_KEY_BYTES - 64) >= _SHORT_PATH


def _path_rule(a: str) -> str:
    """check_path's rules, cheaply and strictly: absolute, no NUL, no empty, "." or ".."
    component (a path without "/." has none of the latter; with one, it is looked at closer),
    short and ASCII (see _SHORT_PATH). "/" itself ends in "/" and takes check_path."""
    return (f'(len({a}) <= {_SHORT_PATH} and {a}.isascii() and {a}[:1] == "/" '
            f'and {a}[-1:] != "/" and "//" not in {a} '
            f'and "\\0" not in {a} and ("/." not in {a} or ("/./" not in {a} '
            f'and "/../" not in {a} and {a}[-2:] != "/." and {a}[-3:] != "/..")))')


# Paths _path_rule cleared, with their JSON: an event's path comes again in the next few
# thousand events about half the time (a file's CREATE, CLOSE and RENAME; a rename's two
# sides), and a lookup costs less than the rule and the encoding (bench.ship). Bounded: cleared
# when full.
_PATH_FIELDS = frozenset({"path", "dst_path"})
_paths: dict[str, str] = {}
# Owners and groups their rule cleared, with their JSON: a cluster has a few hundred at most,
# so nearly every one is a lookup instead of len(), isascii() and the encoder (~0.07 us a
# name, bench.ship).
_names: dict[str, str] = {}


def _text_rule(max_chars: int) -> Callable[[str], str]:
    # ASCII: valid UTF-8 (no lone surrogate), and characters are bytes.
    return lambda a: f"(len({a}) <= {max_chars} and {a}.isascii())"


_STRING_RULES: dict[str, Callable[[str], str]] = {"symlink_target": _text_rule(MAX_PATH_CHARS)}
# A field whose cleared values are looked up with their JSON: the name of its table in the
# plans' scope, how many values the table holds before it is emptied, and the rule a new value
# must pass to be noted.
_LOOKED_UP: dict[str, tuple[str, int, Callable[[str], str]]] = {
    **{name: ("P", 8192, _path_rule) for name in _PATH_FIELDS},
    **{name: ("N", 4096, _text_rule(MAX_NAME_CHARS)) for name in NAME_FIELDS},
}


def _kinds() -> dict[str, type]:
    """Each field's declared type without None: int, bool, str, an enum, or tuple (acls...)."""
    kinds: dict[str, type] = {}
    for name, hint in get_type_hints(HdfsEvent).items():
        args = [a for a in get_args(hint) if a is not NoneType] if isinstance(
            hint, UnionType) else [hint]
        (kind,) = args
        kinds[name] = getattr(kind, "__origin__", kind)
    return kinds


_KINDS = _kinds()


def _writer(*, sparse: bool) -> Callable[[HdfsEvent], str]:
    """The checked writer of one form, with the plans of the shapes it has seen."""
    plans: dict[tuple[bool, ...], _Plan | None] = {}
    by_type: dict[EventType, tuple[_Plan, ...]] = {}
    present: dict[_Plan, int] = {}  # fields a plan writes, of the plans in by_type
    generic = HdfsEvent.to_sparse_json if sparse else HdfsEvent.to_json

    def checked_json(event: HdfsEvent) -> str:
        # First the plans of the shapes this event type had (one or two): reading the type
        # costs less than reading the whole shape (~0.75 us an event). A type that is no
        # EventType finds none, or an equal member's (a str "CLOSE"), whose type test fails it.
        try:
            tried = by_type.get(event.type, ())
        except TypeError:  # unhashable: the contract's check below refuses it
            tried = ()
        for plan in tried:
            text = plan(event)
            if text is not None:
                return text
        plan = shape_plan(event, tried)
        if plan is not None:
            text = plan(event)
            if text is not None:
                return text
        # What the generated plans cannot clear: the contract's own check, then the generic
        # serialiser.
        check_event(event)
        if len(_clusters) < _MAX_CLUSTERS and CLUSTER_NAME.fullmatch(event.cluster):
            _clusters[event.cluster] = encode_basestring(event.cluster)
        return generic(event)

    def shape_plan(event: HdfsEvent, tried: tuple[_Plan, ...]) -> _Plan | None:
        """The plan of the event's shape, unless it is among those `tried` already (None also
        for shapes only the contract's check takes)."""
        shape = _shape(event)
        if shape in plans:
            plan = plans[shape]
        else:
            plan = _plan(shape, sparse=sparse)
            if len(plans) < _MAX_PLANS:
                plans[shape] = plan
                if (plan is not None and type(event.type) is EventType
                        and len(tried) < _PLANS_BY_TYPE):
                    # Fewest fields first: a plan's null test fails within a few slots on an
                    # event with more fields, where a plan of fewer nulls would load and type
                    # every field before a None failed it (a directory's CREATE, whose null
                    # replication failed the file's plan there: ~0.9 us, bench.ship).
                    present[plan] = shape.count(False)
                    by_type[event.type] = tuple(sorted((*tried, plan), key=present.__getitem__))
        return None if plan in tried else plan

    return checked_json


# Which fields are null: one generated expression reading every slot (a tuple of 26 bools costs
# a third of tuple(map(type, attrgetter(...)(event)))).
_shape: Callable[[HdfsEvent], tuple[bool, ...]] = eval(
    f"lambda e: ({', '.join(f'e.{name} is None' for name in FIELDS)},)")
_PLANS_BY_TYPE = 4  # shapes tried by type before the whole shape is looked up
_NAMES: dict[str, Any] = {"E": encode_basestring, "B": {True: "true", False: "false"},
                          "C": _clusters, "GAP": EventType.GAP,
                          "P": _paths, "N": _names,
                          # check_event's 4 octal digits with their JSON: one lookup is the
                          # rule and the encoding.
                          "PERMS": {(mode := f"{m:04o}"): f'"{mode}"' for m in range(0o10000)}}


def _plan(shape: tuple[bool, ...], *, sparse: bool) -> _Plan | None:
    present = {name for name, null in zip(FIELDS, shape, strict=True) if not null}
    if not present.issuperset(REQUIRED) or any(_KINDS[n] is tuple for n in present):
        return None  # acls or xattrs (rare), or an event without its txid...
    scope: dict[str, Any] = dict(_NAMES)
    parts: list[str] = []
    args: list[str] = []
    # Exactly the declared types (an int, not a bool; a str, not a subclass), tested first
    # (the other rules compare values): one chain a kind, `type(a1) is type(a2) is K`, where
    # `type(a) is K` per field was ~5 % more of a CREATE's plan and tuple(map(type, ...)) ==
    # TYPES ~0.5 us more.
    typed: dict[type, list[str]] = {}
    rules: list[str] = []
    for i, name in enumerate(FIELDS):
        a = f"a{i}"
        kind = _KINDS[name]
        if name not in present:
            if not sparse:  # the lake's line keeps every field; the wire leaves a null out
                parts.append(f'{"," if parts else ""}"{name}":null')
            continue
        typed.setdefault(kind, []).append(f"type({a})")
        sep = "," if parts else ""
        if name == "cluster":
            parts.append(f'{sep}"{name}":\0')
            args.append(f"C[{a}]")  # KeyError-free: the rules test `in C` first
            continue
        if kind is bool:
            parts.append(f'{sep}"{name}":\0')
            args.append(f"B[{a}]")
        elif kind is int:  # exactly int (TYPES: a bool is not): format() is int.__repr__
            parts.append(f'{sep}"{name}":\0')
            args.append(a)
            low, high = INT_FIELD_RANGES[name]
            rules.append(f"{low} <= {a} <= {high}")
        elif issubclass(kind, Enum):
            if not issubclass(kind, str):
                return None
            # Each member's JSON looked up: format() of a StrEnum member goes through
            # str.__format__ by its type's slot, ~4x the dict lookup.
            scope[f"J{i}"] = {m: encode_basestring(m.value) for m in kind}
            parts.append(f'{sep}"{name}":\0')
            args.append(f"J{i}[{a}]")
        elif name in _LOOKED_UP:
            # A value cleared before is looked up with its JSON; a new one is tested, then
            # noted (the type chain above has made it a str, so it can be looked up).
            # Noted in the plan's own expression, not by a function of ours: a Python call
            # for every new value (half the paths here) was ~3 % of bench.ship. The table is
            # emptied when full; clear() returns None. A JSON string is never empty, so true.
            table, limit, rule = _LOOKED_UP[name]
            parts.append(f'{sep}"{name}":\0')
            args.append(f"j{i}")
            rules.append(f"((j{i} := {table}.get({a})) is not None "
                         f"or ({rule(a)} and (len({table}) < {limit} or not {table}.clear()) "
                         f"and (j{i} := {table}.setdefault({a}, E({a})))))")
        elif name == "perms":
            parts.append(f'{sep}"{name}":\0')
            args.append(f"j{i}")
            rules.append(f"(j{i} := PERMS.get({a})) is not None")
        else:  # str
            parts.append(f'{sep}"{name}":\0')
            args.append(f"E({a})")
            rule = _STRING_RULES.get(name)
            if rule is not None:
                rules.append(rule(a))
    for k, kind in enumerate(typed):
        scope[f"K{k}"] = kind
    rules[:0] = [f"{' is '.join(types)} is K{k}" for k, types in enumerate(typed.values())]
    rules.append(f"a{FIELDS.index('cluster')} in C")
    # Types that need a field this shape lacks fail check_event: they take the slow path.
    a_type, a_txid = f"a{FIELDS.index('type')}", f"a{FIELDS.index('txid')}"
    missing = sorted(t.name for t, needs in REQUIRED_BY_TYPE.items()
                     if not set(needs) <= present)
    if "gap_end_txid" in present:
        rules.append(f"({a_type} is not GAP or a{FIELDS.index('gap_end_txid')} > {a_txid})")
    else:
        missing.append(EventType.GAP.name)
    if missing:
        scope["MISSING"] = frozenset(EventType[m] for m in missing)
        rules.append(f"{a_type} not in MISSING")
    # An f-string: compiled to one BUILD_STRING, where %-formatting a ~540-character template
    # parsed it again for every event (the largest single cost, by py-spy on bench.ship).
    literal = ("{" + "".join(parts) + "}").replace("{", "{{").replace("}", "}}")
    if "'" in literal or "\\" in literal:
        return None  # no field name holds either; kept out of the source anyway
    first, *rest = literal.split("\0")
    text = first + "".join(f"{{{arg}}}{piece}" for arg, piece in zip(args, rest, strict=True))
    loads = "; ".join(f"a{i} = e.{name}" for i, name in enumerate(FIELDS) if name in present)
    # Every rule runs before the values are formatted: E() of a non-str would raise TypeError.
    # A present field that is None fails its type rule, so only the nulls are tested.
    nulls = " and ".join(f"e.{name} is None" for name in FIELDS if name not in present)
    source = (f"def plan(e):\n    if not ({nulls or 'True'}):\n        return None\n"
              f"    {loads}\n    if ({' and '.join(rules)}):\n"
              f"        return f'{text}'\n    return None\n")
    exec(source, scope)
    plan: _Plan = scope["plan"]
    return plan


checked_sparse_json = _writer(sparse=True)
checked_sparse_json.__doc__ = """The sparse JSON of `event` (the wire's form, what
HdfsEvent.to_sparse_json writes); EventFormatError (from check_event) if the contract refuses
it."""
checked_canonical_json = _writer(sparse=False)
checked_canonical_json.__doc__ = """The canonical JSON of `event` (the lake's line, what
HdfsEvent.to_json writes); EventFormatError (from check_event) if the contract refuses it."""
