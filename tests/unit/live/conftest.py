"""Hadoop's inotify protobuf messages, read once from the agent's JVM (the `jvm` fixture of
tests/conftest.py)."""

from __future__ import annotations

import pytest

from onprem_agent.live.convert import InotifyMessages, load_inotify_messages


@pytest.fixture(scope="session")
def inotify_messages(jvm: object) -> InotifyMessages:
    return load_inotify_messages()
