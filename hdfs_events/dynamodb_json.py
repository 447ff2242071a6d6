"""DynamoDB's typed JSON (`{"S": ...}`, `{"N": "12"}`, `{"M": {...}}`), as the low-level API
sends and returns items: the wire form of every item two components share (the namespace
index, the transfers table).

The same values boto3's TypeSerializer and TypeDeserializer give (a test holds them equal),
written here because the contract imports no AWS SDK, and faster for the types items hold most:
boto3's serializer costs ~20 us an item, and the image job writes every entry of a namespace.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

# DynamoDB numbers hold at most 38 significant digits.
_N_LIMIT = 10 ** 38


def _wire_value(value: Any) -> dict[str, Any]:
    """DynamoDB's typed JSON of one value, as boto3's TypeSerializer writes it (bool before int:
    bool is an int)."""
    kind = type(value)
    if kind is str:
        return {"S": value}
    if kind is bool:
        return {"BOOL": value}
    if kind is int:
        if -_N_LIMIT < value < _N_LIMIT:
            return {"N": str(value)}
        raise ValueError(f"{value}: DynamoDB numbers hold at most 38 digits")
    if value is None:
        return {"NULL": True}
    if kind is Decimal:
        return {"N": str(value)}
    if isinstance(value, Mapping):
        return {"M": {str(k): _wire_value(v) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return {"L": [_wire_value(v) for v in value]}
    if isinstance(value, bytes | bytearray):
        return {"B": bytes(value)}
    raise TypeError(f"{kind.__name__} {value!r}: no DynamoDB type for it in an index item "
                    "(floats too: numbers are whole)")


def _plain_value(wire: Mapping[str, Any]) -> Any:
    """The value of DynamoDB's typed JSON, as boto3's TypeDeserializer gives it (numbers as
    Decimal, sets as sets)."""
    (kind, value), = wire.items()
    if kind == "S" or kind == "BOOL":
        return value
    if kind == "N":
        return Decimal(value)
    if kind == "NULL":
        return None
    if kind == "M":
        return {k: _plain_value(v) for k, v in value.items()}
    if kind == "L":
        return [_plain_value(v) for v in value]
    if kind == "B":
        return bytes(value)
    if kind == "SS" or kind == "BS":
        return set(value)
    if kind == "NS":
        return {Decimal(v) for v in value}
    raise ValueError(f"{kind}: not a DynamoDB attribute type")


def to_wire(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _wire_value(v) for k, v in item.items()}


def from_wire(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _plain_value(v) for k, v in raw.items()}
