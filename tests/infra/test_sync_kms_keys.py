"""cdk.json `sync_kms_keys`: the on-prem principal may have S3 use the KMS key its `sync` writes
objects under ([sync] kms_key_id), that key only and through S3 only; a wrong entry names the
setting. The statement is built as the stack builds it (no synth: cdk.json ships no key, so the
synthesized stacks and test_grants_cover_calls never see one)."""

from __future__ import annotations

import json

import pytest
from aws_cdk import Stack

from stacks.onprem_principal import sync_destination_statements
from stacks.settings import SettingsError, load_settings

KEY = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
OTHER = "arn:aws:kms:eu-west-1:123456789012:key/0000abcd-12ab-34cd-56ef-1234567890ab"


def settings(**env: object):
    return load_settings({"environments": {"test": {"clusters": ["prod", "lab"], **env}}},
                         "test")


def test_a_clusters_sync_key_is_granted_to_it_through_s3_only() -> None:
    s = settings(sync_destinations=["prod=s3://customer-lake/mirror/"],
                 sync_kms_keys=[f"prod={KEY}", f"lab={OTHER}"])
    stack = Stack()  # resolves the region token as a template would
    rendered = [stack.resolve(st.to_json()) for st in sync_destination_statements("prod", s)]
    [key] = [st for st in rendered if st["Sid"] == "UseReplicaKeys"]
    assert sorted(key["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert key["Resource"] == KEY  # the other cluster's key is not prod's
    assert json.dumps(key["Condition"]["StringEquals"]["kms:ViaService"]).count("s3.") == 1
    assert not [st for st in (stack.resolve(x.to_json())
                              for x in sync_destination_statements("lab", settings()))
                if st["Sid"] == "UseReplicaKeys"]


@pytest.mark.parametrize("entry", [f"other={KEY}", "prod=alias/replica",
                                   "prod=arn:aws:kms:eu-west-1:123456789012:alias/replica", KEY])
def test_a_sync_key_entry_must_be_a_cluster_and_a_key_arn(entry: str) -> None:
    with pytest.raises(SettingsError, match=r"test\.sync_kms_keys: .* is not "
                                            r"'<cluster>=arn:aws:kms:"):
        settings(sync_kms_keys=[entry])
