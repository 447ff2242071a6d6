"""agent.toml: defaults, overrides, and errors that name the key and the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from onprem_agent import config as config_module
from onprem_agent import image_fetch
from onprem_agent.agent_toml import ConfigError, Section
from onprem_agent.audit import settings as audit
from onprem_agent.config import SECTIONS, load_config
from onprem_agent.copy_worker import settings as copy
from onprem_agent.live import settings as live
from onprem_agent.live.settings import HDFS, INOTIFY
from onprem_agent.sync import settings as sync

EXAMPLE = Path(__file__).resolve().parents[3] / "onprem_agent" / "examples" / "agent.toml"
QUEUE = "https://sqs.eu-west-1.amazonaws.com/123456789012/events.fifo"


def write(tmp_path: Path, text: str, name: str = "agent.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


MINIMAL = f"""
cluster = "c1"
[sqs]
queue_url = "{QUEUE}"
[checkpoint]
path = "state/cp.json"
"""


def test_example_config_loads_with_its_documented_defaults() -> None:
    config = load_config(EXAMPLE)
    assert config.cluster == "prod-nn1"
    assert config.packing.group_by == "prefix:2"
    assert config.packing.max_message_bytes == 65536
    assert config.packing.linger_ms == 200
    assert config.packing.compress is True
    # Nothing that is renamed into place (an upload's x._COPYING_) may be ignored.
    assert config.filter.ignore_patterns == ()
    assert config.checkpoint.store == "file"
    assert config.checkpoint.path == EXAMPLE.parent / "state" / "checkpoint.json"


def test_minimal_config_takes_code_defaults_and_no_filters(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, MINIMAL))
    assert config.filter.cover_dirs == () and config.filter.ignore_patterns == ()
    assert config.sending.retry_mode == "adaptive"
    assert config.checkpoint.path == tmp_path / "state" / "cp.json"
    assert config.read(HDFS).max_heap == "512m"  # an absent section: its declared defaults


def test_overrides_replace_file_values(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, MINIMAL), {
        "cluster": "other", "packing.group_by": "single", "sqs.queue_url": None,
        "packing.max_message_bytes": 1_048_576})
    assert config.cluster == "other"
    assert config.packing.group_by == "single"
    assert config.packing.max_message_bytes == 1_048_576
    assert config.sqs.queue_url == QUEUE  # None means "flag not given"


def test_message_size_over_the_sqs_limit_names_key_and_file(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "[packing]\nmax_message_bytes = 2000000\n")
    with pytest.raises(ConfigError, match=r"^agent\.toml: \[packing\] max_message_bytes: "
                                          r"must be <= 1048576$"):
        load_config(path)


@pytest.mark.parametrize(("extra", "where"), [
    ("[packing]\ngroup_by = \"prefix:0\"\n", r"\[packing\] group_by"),
    ("[packing]\nlinger = 5\n", r"\[packing\] linger: unknown key"),
    ("[packing]\ncompress = \"yes\"\n", r"\[packing\] compress: must be true or false"),
    ("[filter]\ncover_dirs = [\"data\"]\n", r"\[filter\] cover_dirs: 'data' is not an absolute"),
    ("[filter]\nignore_patterns = [\"(\"]\n", r"\[filter\] ignore_patterns: '\(' is not a valid"),
    ("[sending]\nretry_mode = \"legacy\"\n", r"\[sending\] retry_mode"),
    ("[sending]\nmax_in_flight_batches = true\n", r"\[sending\] max_in_flight_batches: must be an integer"),
    ("[bogus]\nx = 1\n", r"bogus: unknown section"),
])
def test_bad_values_name_key_and_file(tmp_path: Path, extra: str, where: str) -> None:
    with pytest.raises(ConfigError, match=rf"^agent\.toml: {where}"):
        load_config(write(tmp_path, MINIMAL + extra))


def test_missing_queue_and_non_fifo_queue_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"agent\.toml: \[sqs\] queue_url: required"):
        load_config(write(tmp_path, 'cluster = "c1"\n[checkpoint]\npath = "x"\n'))
    with pytest.raises(ConfigError, match=r"\[sqs\] queue_url: .* is not a FIFO queue"):
        load_config(write(tmp_path, MINIMAL.replace(".fifo", "")))


def test_dynamodb_store_needs_a_table(tmp_path: Path) -> None:
    text = MINIMAL.replace('path = "state/cp.json"', 'store = "dynamodb"')
    with pytest.raises(ConfigError, match=r"\[checkpoint\] table: required"):
        load_config(write(tmp_path, text))
    config = load_config(write(tmp_path, text + 'table = "agent-state"\n'))
    assert config.checkpoint.table == "agent-state"


@pytest.mark.parametrize("line", [
    '[sqs]\naws_secret_access_key = "abc"',
    '[kerberos]\npassword = "hunter2"',
    '[metrics]\nsession_token = "x"',
])
def test_secret_keys_are_refused_pointing_at_the_aws_chain(tmp_path: Path, line: str) -> None:
    text = MINIMAL.replace("[sqs]\n", "") if line.startswith("[sqs]") else MINIMAL
    if line.startswith("[sqs]"):
        text = text.replace(f'queue_url = "{QUEUE}"\n', "")
        line = line + f'\nqueue_url = "{QUEUE}"'
    with pytest.raises(ConfigError, match=r"agent\.toml: .*(secret|password|token).*standard "
                                          r"AWS credential chain"):
        load_config(write(tmp_path, text + line + "\n"))


def test_endpoint_and_region_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[sqs\] endpoint_url: .*AWS_ENDPOINT_URL"):
        load_config(write(tmp_path, MINIMAL.replace("[sqs]\n", '[sqs]\nendpoint_url = "x"\n')))
    with pytest.raises(ConfigError, match=r"region: .*AWS_REGION"):
        load_config(write(tmp_path, 'region = "eu-west-1"\n' + MINIMAL))


def test_another_components_section_is_checked_when_its_command_reads_it(
        tmp_path: Path) -> None:
    config = load_config(write(tmp_path, MINIMAL + '[inotify]\npoll_ms = 5\n'))
    with pytest.raises(ConfigError, match=r"^agent\.toml: \[inotify\] poll_ms: unknown key; "
                                          r"known: poll_timeout_ms, "):
        config.read(INOTIFY)


def test_every_section_the_file_may_hold_is_declared() -> None:
    declared = {section.name for module in (config_module, live, sync, audit, copy, image_fetch)
                for section in vars(module).values() if isinstance(section, Section)}
    assert declared == {"", *SECTIONS}


def test_bad_toml_and_missing_file_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"agent\.toml: not valid TOML"):
        load_config(write(tmp_path, "cluster = \n"))
    with pytest.raises(ConfigError, match=r"nope\.toml: no such config file"):
        load_config(tmp_path / "nope.toml")


def test_bad_cluster_name_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"agent\.toml: cluster: cluster name 'a b'"):
        load_config(write(tmp_path, MINIMAL.replace('"c1"', '"a b"')))
