"""The kit's condition evaluator on IAM's documented edge cases, the ones the enforcing moto
server relies on: an absent key, empty multivalued keys, and an explicit Deny spared by either
of two conditions."""

from __future__ import annotations

import pytest

from tests.kit.iam_conditions import (
    UnsupportedCondition,
    allow_applies,
    condition_matches,
    deny_applies,
)

AGENT = "arn:aws:iam::123456789012:user/agent"
QUEUE = "arn:aws:sqs:eu-west-1:123456789012:events.fifo"
# stacks/ingest.py's OnlyAgentsSendEvents, as the template renders it with one extra sender.
ONLY_AGENTS = {"Sid": "OnlyAgentsSendEvents", "Effect": "Deny", "Principal": {"AWS": "*"},
               "Action": "sqs:SendMessage", "Resource": QUEUE,
               "Condition": {"ArnNotEquals": {"aws:PrincipalArn": [AGENT]},
                             "StringNotLike": {"aws:userid": ["AROASITE", "AROASITE:*"]}}}


def caller(arn: str, userid: str) -> dict[str, str]:
    return {"aws:PrincipalArn": arn, "aws:userid": userid}


def test_the_queue_deny_spares_a_listed_arn_or_a_listed_unique_id_and_no_one_else():
    site = "arn:aws:iam::123456789012:role/site"
    deny = [ONLY_AGENTS]
    send = {"action": "sqs:SendMessage", "resource": QUEUE}
    assert deny_applies(deny, **send, context=caller(AGENT, "AIDAAGENT")) is None
    assert deny_applies(deny, **send, context=caller(site, "AROASITE:session")) is None
    assert deny_applies(deny, **send, context=caller(site, "AROAOTHER:session")) == \
        "OnlyAgentsSendEvents"
    # Another action, or another queue, is not this statement's business.
    assert deny_applies(deny, action="sqs:ReceiveMessage", resource=QUEUE,
                        context=caller(site, "AROAOTHER:s")) is None


def test_a_negated_operator_matches_an_absent_key_and_a_positive_one_does_not():
    assert condition_matches({"StringNotLike": {"s3:prefix": ["exports/*"]}}, {})
    assert not condition_matches({"StringLike": {"s3:prefix": ["exports/*"]}}, {})


def test_for_all_values_holds_for_no_value_and_for_any_value_does_not():
    own = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["demo#*"]}}
    assert condition_matches(own, {"dynamodb:LeadingKeys": []})
    assert condition_matches(own, {"dynamodb:LeadingKeys": ["demo#/a", "demo#/b"]})
    assert not condition_matches(own, {"dynamodb:LeadingKeys": ["demo#/a", "prod#/a"]})
    anyone = {"ForAnyValue:StringEquals": {"dynamodb:LeadingKeys": ["demo"]}}
    assert not condition_matches(anyone, {"dynamodb:LeadingKeys": []})


def test_an_allow_needs_its_action_resource_and_condition():
    statement = {"Effect": "Allow", "Action": "cloudwatch:PutMetricData", "Resource": "*",
                 "Condition": {"StringEquals": {"cloudwatch:namespace": "HdfsEvents"}}}
    put = {"action": "cloudwatch:putmetricdata", "resource": "*"}  # actions are case-blind
    assert allow_applies([statement], **put, context={
        "aws:PrincipalArn": AGENT, "cloudwatch:namespace": "HdfsEvents"})
    assert not allow_applies([statement], **put, context={
        "aws:PrincipalArn": AGENT, "cloudwatch:namespace": "Other"})


def test_a_key_the_kit_cannot_supply_fails_loudly_only_where_it_matters():
    statement = {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*",
                 "Condition": {"StringEquals": {"kms:ViaService": "s3.eu-west-1.amazonaws.com"}}}
    assert not allow_applies([statement], action="s3:GetObject", resource="*",
                             context={"aws:PrincipalArn": AGENT})
    with pytest.raises(UnsupportedCondition, match="kms:ViaService"):
        allow_applies([statement], action="kms:Decrypt", resource="*",
                      context={"aws:PrincipalArn": AGENT})
