"""Policy statements evaluated as IAM does, with their Condition elements, for the operators and
keys our templates use: moto 5.2 evaluates no resource policy and no identity-policy condition.

Pure: statements and the request's context in, a verdict out. Used by the kit's moto server
(tests/kit/iam_server.py): the Deny statements of an SQS queue's policy, and the conditions of
the caller's identity-policy statements that allow a request.

Semantics (IAM's "Condition element", "multivalued context keys" and "policy evaluation logic"
pages):
- a statement applies when its Action, Resource and Principal match and EVERY condition
  operator in it matches; within one operator every key must match; a key with a list of values
  matches when any value does (for the negated operators: when none does);
- a negated operator (`...NotEquals`, `...NotLike`) on a key absent from the request matches, a
  positive one does not;
- multivalued keys (dynamodb:LeadingKeys): `ForAllValues:` matches when every request value
  matches (also when there is none), `ForAnyValue:` when at least one does;
- `*` and `?` are the wildcards of the `...Like` and Arn operators (and of Action, Resource).
An operator or key this evaluator does not know raises `UnsupportedCondition`, and only for a
statement that would otherwise apply: a condition silently ignored would let a test pass that
AWS fails.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

# Operator -> (how a value is compared, whether the operator is negated). ArnEquals and ArnLike
# are the same operator in IAM (both take wildcards).
_OPERATORS: dict[str, tuple[str, bool]] = {
    "StringEquals": ("equals", False), "StringNotEquals": ("equals", True),
    "StringLike": ("like", False), "StringNotLike": ("like", True),
    "ArnEquals": ("like", False), "ArnNotEquals": ("like", True),
    "ArnLike": ("like", False), "ArnNotLike": ("like", True),
    "Bool": ("equals", False),
}

# The request context keys the kit's server supplies (a key absent from a given request is
# supplied as absent); any other key in a statement that applies is an error.
KNOWN_KEYS = frozenset({"aws:PrincipalArn", "aws:userid", "aws:PrincipalAccount",
                        "aws:SecureTransport", "dynamodb:LeadingKeys", "s3:prefix",
                        "cloudwatch:namespace"})

Context = Mapping[str, str | Sequence[str]]


class UnsupportedCondition(ValueError):
    """A condition operator or key the kit cannot evaluate."""


@cache
def _wildcard(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c)
                              for c in pattern) + r"\Z", re.DOTALL)


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def matches(pattern: str, value: str, *, case_sensitive: bool = True) -> bool:
    """IAM wildcard match of one value (`*` any run, `?` one character)."""
    if not case_sensitive:
        pattern, value = pattern.lower(), value.lower()
    return _wildcard(pattern).match(value) is not None


def _value_matches(comparison: str, expected: list[Any], actual: str) -> bool:
    return any(actual == str(e) if comparison == "equals" else matches(str(e), actual)
               for e in expected)


def condition_matches(condition: Mapping[str, Mapping[str, Any]], context: Context) -> bool:
    """True when every operator of a statement's Condition element matches the context."""
    for qualified, keys in condition.items():
        qualifier, _, operator = qualified.rpartition(":")
        if operator not in _OPERATORS or qualifier not in ("", "ForAllValues", "ForAnyValue"):
            raise UnsupportedCondition(f"condition operator {qualified!r}")
        comparison, negated = _OPERATORS[operator]
        for key, expected in keys.items():
            if key not in KNOWN_KEYS:
                raise UnsupportedCondition(f"condition key {key!r} ({qualified})")
            actual = context.get(key)
            values = [] if actual is None else _as_list(actual)
            hits = [_value_matches(comparison, _as_list(expected), v) != negated
                    for v in values]
            if qualifier == "ForAllValues":
                ok = all(hits)
            elif qualifier == "ForAnyValue":
                ok = any(hits)
            elif actual is None:
                ok = negated
            else:
                ok = all(hits) if negated else any(hits)
            if not ok:
                return False
    return True


def _principal_matches(principal: Any, principal_arn: str) -> bool:
    if principal is None:  # an identity policy: the caller is its principal
        return True
    if principal == "*":
        return True
    if isinstance(principal, Mapping) and "AWS" in principal:
        return any(p == "*" or p == principal_arn for p in _as_list(principal["AWS"]))
    return False  # a service principal never makes the requests we check


def _applies(statement: Mapping[str, Any], action: str, resource: str,
             principal_arn: str) -> bool:
    """Action, Resource and Principal match (the Condition aside)."""
    if "NotPrincipal" in statement:
        raise UnsupportedCondition("NotPrincipal")
    if "NotAction" in statement:
        if any(matches(a, action, case_sensitive=False) for a in _as_list(statement["NotAction"])):
            return False
    elif not any(matches(a, action, case_sensitive=False)
                 for a in _as_list(statement.get("Action", []))):
        return False
    if "NotResource" in statement:
        if any(matches(r, resource) for r in _as_list(statement["NotResource"])):
            return False
    elif not any(matches(r, resource) for r in _as_list(statement.get("Resource", []))):
        return False
    return _principal_matches(statement.get("Principal"), principal_arn)


def deny_applies(statements: Sequence[Mapping[str, Any]], *, action: str, resource: str,
                 context: Context) -> str | None:
    """The Sid (or "statement N") of the first Deny statement that applies, else None."""
    for n, statement in enumerate(statements):
        if statement.get("Effect") == "Deny" and \
                _applies(statement, action, resource, str(context["aws:PrincipalArn"])) and \
                condition_matches(statement.get("Condition", {}), context):
            return str(statement.get("Sid", f"statement {n}"))
    return None


def allow_applies(statements: Sequence[Mapping[str, Any]], *, action: str, resource: str,
                  context: Context) -> bool:
    """Whether an Allow statement applies, its Condition included."""
    return any(statement.get("Effect") == "Allow"
               and _applies(statement, action, resource, str(context["aws:PrincipalArn"]))
               and condition_matches(statement.get("Condition", {}), context)
               for statement in statements)
