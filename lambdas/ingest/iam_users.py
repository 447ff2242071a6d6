"""IAM users: the unique id SQS reports as a message's sender (lambdas/ingest/senders.py)."""

from __future__ import annotations

from typing import Any

from lambdas.ingest.clients import client


class IamUsers:
    def __init__(self, iam: Any | None = None) -> None:
        self.iam = iam or client("iam")

    def unique_id(self, user_name: str) -> str:
        """The user's IAM unique id ("AIDA..."), what SQS reports as a message's SenderId."""
        return str(self.iam.get_user(UserName=user_name)["User"]["UserId"])
