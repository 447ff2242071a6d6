"""The Deny statements of a resource policy, evaluated as IAM does, for the few condition
operators and keys our templates use: moto 5.2 evaluates no resource policy at all.

Pure: the statement list and the request's context in, "denied or not" out. Used by the kit's
moto server (tests/kit/iam_server.py) on every SQS call to a queue that has a policy.

Semantics (IAM's "Condition element" and "policy evaluation logic" pages):
- a statement applies when its Action, Resource and Principal match and EVERY condition operator
  in it matches; within one operator every key must match; a key with a list of values matches
  when any value does (for the negated operators: when none does);
- a negated operator (`...NotEquals`, `...NotLike`) on a key absent from the request matches, a
  positive one does not;
- `*` and `?` are the wildcards of the `...Like` operators (and of Action and Resource).
An operator or key this evaluator does not know raises `UnsupportedCondition`: a condition
silently ignored would let a test pass that AWS fails.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

# Operator -> (how a value is compared, whether the operator is negated). The Arn operators
# compare as the String ones here: both sides are whole ARNs in our templates.
_OPERATORS: dict[str, tuple[str, bool]] = {
    "StringEquals": ("equals", False), "StringNotEquals": ("equals", True),
    "StringLike": ("like", False), "StringNotLike": ("like", True),
    "ArnEquals": ("like", False), "ArnNotEquals": ("like", True),
    "ArnLike": ("like", False), "ArnNotLike": ("like", True),
    "Bool": ("equals", False),
}

# The request context keys a caller of `deny_applies` must be able to supply.
KNOWN_KEYS = frozenset({"aws:PrincipalArn", "aws:userid", "aws:PrincipalAccount",
                        "aws:SecureTransport"})


class UnsupportedCondition(ValueError):
    """A condition operator or key the kit cannot evaluate."""


@cache
def _wildcard(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c)
                              for c in pattern) + r"\Z", re.DOTALL)


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def matches(pattern: str, value: str, *, case_sensitive: bool = True) -> bool:
    """IAM wildcard match of one value (`*` any run, `?` one character)."""
    if not case_sensitive:
        pattern, value = pattern.lower(), value.lower()
    return _wildcard(pattern).match(value) is not None


def condition_matches(condition: Mapping[str, Mapping[str, Any]],
                      context: Mapping[str, str]) -> bool:
    """True when every operator of a statement's Condition element matches the context."""
    for operator, keys in condition.items():
        if operator not in _OPERATORS:
            raise UnsupportedCondition(f"condition operator {operator!r}")
        comparison, negated = _OPERATORS[operator]
        for key, expected in keys.items():
            if key not in KNOWN_KEYS:
                raise UnsupportedCondition(f"condition key {key!r} ({operator})")
            actual = context.get(key)
            if actual is None:
                if not negated:
                    return False
                continue
            hit = any(actual == str(e) if comparison == "equals" else matches(str(e), actual)
                      for e in _as_list(expected))
            if hit == negated:
                return False
    return True


def _principal_matches(principal: Any, principal_arn: str) -> bool:
    if principal == "*":
        return True
    if isinstance(principal, Mapping) and "AWS" in principal:
        return any(p == "*" or p == principal_arn for p in _as_list(principal["AWS"]))
    return False  # a service principal never makes the requests we check


def deny_applies(statements: Sequence[Mapping[str, Any]], *, action: str, resource: str,
                 context: Mapping[str, str]) -> str | None:
    """The Sid (or "statement N") of the first Deny statement that applies, else None."""
    for n, statement in enumerate(statements):
        if statement.get("Effect") != "Deny":
            continue
        if "NotAction" in statement or "NotResource" in statement or \
                "NotPrincipal" in statement:
            raise UnsupportedCondition(f"statement {n} uses NotAction/NotResource/NotPrincipal")
        if not any(matches(a, action, case_sensitive=False)
                   for a in _as_list(statement.get("Action", []))):
            continue
        if not any(matches(r, resource) for r in _as_list(statement.get("Resource", []))):
            continue
        if not _principal_matches(statement.get("Principal"), context["aws:PrincipalArn"]):
            continue
        if condition_matches(statement.get("Condition", {}), context):
            return str(statement.get("Sid", f"statement {n}"))
    return None
