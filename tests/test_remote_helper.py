"""The remote helper as shipped (its zip, run with the system's Python in isolated mode), spoken to over a pipe
exactly as an SSH session speaks to it, without SSH: processes, files, the write guard, the network facts, and
how it answers a request it cannot serve."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.tool_context import wait_for

from tools.hosts.remote.bundle import build
from tools.hosts.ssh.channel import ChannelClosed, HelperChannel, RemoteError

PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable


@pytest.fixture
def helper(tmp_path: Path) -> Iterator[HelperChannel]:
    zipped = tmp_path / build().file_name
    zipped.write_bytes(build().data)
    channel = HelperChannel([PYTHON, "-I", str(zipped), "serve"], hello_timeout=30)
    try:
        yield channel
    finally:
        channel.close()


def test_the_zip_holds_only_standard_library_modules_and_starts_in_isolation(helper: HelperChannel) -> None:
    assert helper.hello["python"].split(".")[0] == "3"
    assert helper.hello["home"]


def test_a_supervised_process_is_started_watched_and_signalled(helper: HelperChannel, tmp_path: Path) -> None:
    log, exits = tmp_path / "logs" / "job.log", tmp_path / "exits"
    started = helper.call(
        "spawn",
        {
            "argv": ["sh", "-c", "echo ready; sleep 300"],
            "env": {"MARK": "job-7"},
            "log_path": str(log),
            "exit_dir": str(exits),
        },
        timeout=30,
    )
    identity = {"pid": started["pid"], "create_time": started["create_time"], "exit_dir": str(exits)}
    assert wait_for(lambda: "ready" in log.read_text())
    assert helper.call("status", identity, timeout=30)["alive"]
    marked = helper.call("find_marked", {"variable": "MARK"}, timeout=30)
    assert [item["value"] for item in marked if item["pid"] == started["pid"]] == ["job-7"]
    wrong = {**identity, "create_time": started["create_time"] - 5}
    assert helper.call("signal", {**wrong, "signum": signal.SIGKILL}, timeout=30) == {"sent": False}
    assert helper.call("signal", {**identity, "signum": signal.SIGTERM}, timeout=30) == {"sent": True}
    assert wait_for(lambda: not helper.call("status", identity, timeout=30)["alive"])
    assert helper.call("status", identity, timeout=30)["exit_code"] in (-signal.SIGTERM, 128 + signal.SIGTERM)


def test_a_command_runs_in_its_own_group_and_is_killed_on_timeout(helper: HelperChannel) -> None:
    quick = helper.call("run", {"argv": ["sh", "-c", "echo out; echo err >&2"], "timeout": 10}, timeout=30)
    assert (quick["exit_code"], quick["stdout"], quick["stderr"]) == (0, "out\n", "err\n")
    slow = helper.call("run", {"argv": ["sh", "-c", "sleep 30 & sleep 30"], "timeout": 0.5}, timeout=30)
    assert slow["timed_out"] and slow["exit_code"] is None


def test_logs_are_read_from_the_end_and_missing_ones_are_named(helper: HelperChannel, tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    log.write_text("".join(f"line {number}\n" for number in range(1, 10001)))
    tail = helper.call("last_lines", {"path": str(log), "max_lines": 2, "max_bytes": 65536}, timeout=30)
    assert tail["lines"] == ["line 9999", "line 10000"] and tail["scanned_bytes"] < log.stat().st_size
    filtered = {"path": str(log), "max_lines": 2, "max_bytes": 65536, "filter": {"pattern": "LINE 999"}}
    matched = helper.call("last_lines", filtered, timeout=30)
    assert matched["lines"] == ["line 9998", "line 9999"]
    assert log.read_bytes()[matched["start_offset"] :].startswith(b"line 9998\n")
    with pytest.raises(RemoteError, match="agent's side") as regex:  # RE2 is not in the standard library
        helper.call("last_lines", {**filtered, "filter": {"pattern": r"line 99\d\d$", "regex": True}}, timeout=30)
    assert regex.value.kind == "failed"
    since = helper.call("since", {"path": str(log), "offset": tail["start_offset"], "max_bytes": 1024}, timeout=30)
    assert since["text"] == "line 9999\nline 10000\n"
    with pytest.raises(RemoteError) as missing:
        helper.call("since", {"path": str(tmp_path / "none.log"), "offset": 0, "max_bytes": 10}, timeout=30)
    assert missing.value.kind == "not_found"


def test_edits_are_confined_by_the_write_guard(helper: HelperChannel, tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    (root / "link.py").symlink_to(tmp_path / "outside.py")
    read = helper.call("confined_read", {"path": str(root / "a.py"), "roots": [str(root)]}, timeout=30)
    write = {
        "path": str(root / "a.py"),
        "roots": [str(root)],
        "data_b64": "eCA9IDIK",
        "expected": [read["inode"], read["device"]],
    }
    helper.call("confined_write", write, timeout=30)
    assert (root / "a.py").read_text() == "x = 2\n"
    for path in (root / "link.py", Path("/etc/hostname")):
        with pytest.raises(RemoteError) as refused:
            helper.call("confined_read", {"path": str(path), "roots": [str(root)]}, timeout=30)
        assert refused.value.kind == "write_refused"


def test_network_facts_and_a_short_lived_listener(helper: HelperChannel) -> None:
    interfaces = helper.call("interfaces", {}, timeout=30)
    assert any(item["name"] == "lo" and "127.0.0.1/8" in item["addresses"] for item in interfaces)
    opened = helper.call("listen", {"address": "127.0.0.1", "port": 0, "seconds": 30}, timeout=30)
    assert helper.call("connect", {"address": "127.0.0.1", "port": opened["port"], "timeout": 2}, timeout=30) == {
        "error": None
    }
    helper.call("stop_listening", {"port": opened["port"]}, timeout=30)
    closed = helper.call("connect", {"address": "127.0.0.1", "port": opened["port"], "timeout": 2}, timeout=30)
    assert "refused" in str(closed["error"]).lower()


def test_an_unknown_operation_is_an_error_and_a_closed_channel_says_so(helper: HelperChannel) -> None:
    with pytest.raises(RemoteError) as unknown:
        helper.call("format_disk", {}, timeout=30)
    assert unknown.value.kind == "unknown_op"
    helper.close()
    with pytest.raises(ChannelClosed):
        helper.call("hello", {}, timeout=5)
    assert json.dumps(helper.hello)  # what it said when it started stays readable
