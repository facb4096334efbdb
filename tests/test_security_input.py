"""Bad input is refused in one line (exit 2) before anything is written; untrusted patterns and silent
servers cannot make the agent wait past its limits."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import run_agent, write_script

from agent.state import ProjectState
from agent.store import StateFileError, read_state
from tools.base import ToolContext, ToolSettings
from tools.catalog import default_registry
from tools.hosts.local import LocalHost

REGISTRY = default_registry()


@pytest.mark.parametrize(
    "arguments",
    [
        ["run", "-g", "x", "--max-wall-seconds", "inf"],
        ["run", "-g", "x", "--max-cost-usd", "nan"],
        ["run", "-g", "x", "--max-cost-usd", "0"],
        ["run", "-g", "x", "--max-steps", "0"],
        ["run", "-g", ""],
        ["run", "-g", "   "],
        ["run", "-g", "serve\n# Injected heading"],
        ["run", "-g", "x", "--notify", "webhook:http://[::1"],
        ["run", "-g", "x", "--notify", "slack:http://host:99999/x"],
        ["run", "-g", "x", "--notify", "ntfy:not-a-url"],
        ["run", "-g", "x", "--sim", "no-such-scenario"],
        ["run", "-g", "x", "--policy", "scripted"],
        ["ask", "--answer", "yes"],
        ["resume"],
        ["tool", "shell", "--sim", "no-such-scenario"],
    ],
)
def test_usage_errors_are_one_line_exit_2_and_write_nothing(arguments: list[str], tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    result = run_agent(*arguments, "--state-dir", state_dir, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("agent: error:"), result.stderr
    assert not state_dir.exists(), "a usage error created the state directory"


@pytest.mark.parametrize("directory", ["/", "~", "/etc", "/usr", "/var", "/tmp"])
def test_the_state_directory_is_never_the_root_a_home_or_a_system_directory(directory: str, tmp_path: Path) -> None:
    target = str(Path(directory).expanduser())
    result = run_agent("status", "--state-dir", target, cwd=tmp_path)
    assert result.returncode == 2 and "give a directory of its own" in result.stderr, result.stderr


@pytest.mark.parametrize("version", ["2", 2.0, True, None, -1])
def test_schema_versions_must_be_integers(version: object, tmp_path: Path) -> None:
    document = json.loads(ProjectState(goal="g").model_dump_json())
    document["schema_version"] = version
    path = tmp_path / "latest.json"
    path.write_text(json.dumps(document))
    with pytest.raises(StateFileError, match="schema version"):
        read_state(path)


def test_a_goal_renders_as_one_line_in_the_hand_over(tmp_path: Path) -> None:
    script = write_script(tmp_path / "plan.json", [{"finish": "done"}])
    goal = "serve *kimi* [here](javascript:alert(1)) <b>now</b>"
    done = run_agent("run", "-g", goal, "--script", script, "--state-dir", tmp_path / "state", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    status = run_agent("status", tmp_path / "state", cwd=tmp_path)
    heading = status.stdout.splitlines()[0]
    assert heading.startswith("# ") and "[here]" not in heading and "<b>" not in heading and "\\[here\\]" in heading


def _tool_context(tmp_path: Path) -> ToolContext:
    return ToolContext(
        state=ProjectState(goal="bounded"),
        state_dir=tmp_path / "state",
        host=LocalHost(tmp_path / "exits"),
        settings=ToolSettings(engine_python=sys.executable, readable_log_dirs=[tmp_path]),
    )


def test_a_catastrophic_filter_cannot_hang_tail_log(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    log.write_text(("a" * 5000 + "b\n") * 50)
    result = REGISTRY.execute(
        "tail_log", {"path": str(log), "filter": "(a+)+$", "regex": True}, _tool_context(tmp_path)
    )
    assert result.ok and result.output is not None, result.error
    assert result.output["lines"] == []
    backreference = REGISTRY.execute(
        "tail_log", {"path": str(log), "filter": r"(a)\1", "regex": True}, _tool_context(tmp_path)
    )
    assert not backreference.ok and "RE2" in (backreference.error or "")


@pytest.mark.parametrize("target", ["/etc/shadow", "/etc/passwd", "ssh key", "link"])
def test_log_tools_read_only_managed_logs_or_what_a_human_approved(target: str, tmp_path: Path) -> None:
    from tools.base import NeedsApproval

    context = _tool_context(tmp_path / "inside")
    (tmp_path / "inside").mkdir()
    (tmp_path / "inside" / "link").symlink_to("/etc/passwd")
    key = tmp_path / "home" / ".ssh" / "id_rsa"
    key.parent.mkdir(parents=True)
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    path = {"link": str(tmp_path / "inside" / "link"), "ssh key": str(key)}.get(target, target)
    for tool in ("tail_log", "diagnose_log"):
        with pytest.raises(NeedsApproval) as raised:
            REGISTRY.execute(tool, {"path": path}, context)
        assert raised.value.evidence[0] == f"read: {Path(path).resolve()}"


@pytest.fixture
def silent_server() -> Iterator[int]:
    """Accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()


def test_the_correctness_probe_honours_its_timeout_against_a_silent_server(tmp_path: Path, silent_server: int) -> None:
    context = _tool_context(tmp_path)
    started = time.monotonic()
    result = REGISTRY.execute(
        "check_correctness",
        {"base_url": f"http://127.0.0.1:{silent_server}", "model": "m", "timeout_seconds": 2},
        context,
    )
    assert not result.ok and "did not answer" in (result.error or ""), result
    assert time.monotonic() - started < 60, "the probe ran far past its limit"
    bench = REGISTRY.execute(
        "run_bench",
        {
            "base_url": f"http://127.0.0.1:{silent_server}",
            "model": "m",
            "num_prompts": 1,
            "request_timeout_seconds": 2,
            "warmup_requests": 0,
        },
        context,
    )
    assert not bench.ok and "did not answer the correctness probe" in (bench.error or ""), bench
    assert context.state.benchmarks == []
