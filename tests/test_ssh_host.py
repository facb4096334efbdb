"""The SSH host against real OpenSSH servers in network namespaces: tool calls over SSH, a process that outlives a
dropped connection and the agent's restart, an interrupted call, a changed host key, and an unreachable host."""

from __future__ import annotations

import json
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support.cli import run_agent
from support.cluster import NamespacedNodes, namespaced_cluster

from agent.state import ProjectState
from tools.base import NeedsApproval, ToolContext, ToolSettings
from tools.catalog import default_registry
from tools.hosts.ssh.connection import HostKeyRefused
from tools.hosts.ssh.host import SshHost
from tools.processes import SPAWN_MARKER, adopt_unrecorded, reconcile_processes, start_process, stop_process


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NamespacedNodes]:
    with namespaced_cluster("dsv3-2x8-h100", tmp_path_factory.mktemp("cluster")) as cluster:
        yield cluster


def _context(tmp_path: Path, host: SshHost) -> ToolContext:
    return ToolContext(
        state=ProjectState(goal="test"),
        state_dir=tmp_path / "state",
        host=host,
        settings=ToolSettings(engine_python="python3"),
    )


def test_tool_calls_run_on_the_remote_host(nodes: NamespacedNodes, tmp_path: Path) -> None:
    work = nodes.remote_dir / "work"
    host = nodes.host(0, write_roots=[str(work)])
    context = _context(tmp_path, host)
    registry = default_registry()
    work.mkdir(parents=True, exist_ok=True)
    (work / "engine.py").write_text("BATCH = 8\n")
    log = host.log_dir(context.logs_dir) / "server.log"  # the run's log directory on the host: readable there
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("".join(f"line {number}\n" for number in range(1, 2001)) + "RuntimeError: CUDA out of memory\n")
    try:
        # No sandbox on a remote host: a read-only diagnostic runs, and it ran inside node 0's namespace.
        shell = registry.execute("shell", {"command": "ss -tln", "cwd": str(work)}, context)
        assert shell.ok and shell.output is not None, shell.error
        assert f"{nodes.cluster.nodes[0].address}:22" in shell.output["stdout"]
        assert shell.output["confinement"] == "read-only allow-list (no sandbox)"

        tail = registry.execute("tail_log", {"path": str(log), "lines": 2}, context)
        assert tail.ok and tail.output is not None
        assert tail.output["lines"] == ["line 2000", "RuntimeError: CUDA out of memory"]
        pattern = {"path": str(log), "lines": 2, "filter": r"^line 19\d9$", "regex": True}
        matched = registry.execute("tail_log", pattern, context)  # RE2 runs here, on the lines the helper sent
        assert matched.ok and matched.output is not None
        assert matched.output["lines"] == ["line 1989", "line 1999"]
        assert log.read_bytes()[matched.output["start_offset"] :].startswith(b"line 1989\n")
        substring = registry.execute("tail_log", {"path": str(log), "lines": 5, "filter": "cuda OUT"}, context)
        assert substring.ok and substring.output is not None
        assert substring.output["lines"] == ["RuntimeError: CUDA out of memory"]
        broken = registry.execute("tail_log", {**pattern, "filter": r"(a)\1"}, context)
        assert not broken.ok and "RE2 syntax" in (broken.error or "")

        diagnosis = registry.execute("diagnose_log", {"path": str(log)}, context)
        assert diagnosis.ok and diagnosis.output is not None and diagnosis.output["class"] == "cuda_oom"

        patch = registry.execute(
            "patch_file", {"path": str(work / "engine.py"), "search": "8", "replace": "4"}, context
        )
        assert patch.ok, patch.error
        assert (work / "engine.py").read_text() == "BATCH = 4\n"
        elsewhere = nodes.remote_dir / "elsewhere.conf"
        elsewhere.write_text("BATCH = 8\n")
        with pytest.raises(NeedsApproval) as asked:  # outside the roots there: a question, with the host named
            registry.execute("patch_file", {"path": str(elsewhere), "search": "8", "replace": "4"}, context)
        assert asked.value.evidence[0].startswith(f"patch: {host.name}:{elsewhere} (change sha256:")
        assert elsewhere.read_text() == "BATCH = 8\n"
        record = host.agent_places()[0] + "/record.json"  # the agent's own files there: refused, never asked
        Path(record).parent.mkdir(parents=True, exist_ok=True)
        Path(record).write_text('{"exit_code": 0}')
        own = registry.execute("patch_file", {"path": record, "search": "0", "replace": "1"}, context)
        assert not own.ok and "the agent's own files" in (own.error or ""), own.error
        reverted = registry.execute("revert_patch", {"patch_id": "patch1"}, context)
        assert reverted.ok and (work / "engine.py").read_text() == "BATCH = 8\n"
    finally:
        host.close()


def test_the_shell_guard_judges_with_the_remote_hosts_facts(nodes: NamespacedNodes, tmp_path: Path) -> None:
    host = nodes.host(0)
    context = _context(tmp_path, host)
    try:
        with pytest.raises(NeedsApproval, match="not on node0") as removal:
            default_registry().execute("shell", {"command": f"rm -rf {host.home()}"}, context)
        assert "home directory" in " ".join(removal.value.evidence)
        with pytest.raises(NeedsApproval) as kill:
            default_registry().execute("shell", {"command": "kill 1"}, context)
        assert "not started by the agent" in " ".join(kill.value.evidence)
    finally:
        host.close()


def test_a_process_survives_a_dropped_connection_and_the_agents_restart(nodes: NamespacedNodes, tmp_path: Path) -> None:
    host = nodes.host(1)
    context = _context(tmp_path, host)
    record = start_process(context, name="sleeper", argv=["sleep", "300"])
    try:
        nodes.end_connections()  # the network drops: the shared connection and the helper's session end
        assert host.status(record.pid, record.create_time).alive  # a new connection finds it running

        restarted = nodes.host(1)  # a new agent process: nothing but the record
        notes = reconcile_processes(context.state, [restarted])
        assert any("re-adopted, still running" in note for note in notes)
        outcome = stop_process(record, restarted, grace_seconds=5)
        assert outcome.stopped and outcome.exit_code == -signal.SIGTERM
        assert "killed by SIGTERM" in Path(record.log_path).read_text()  # the log was written on the node
        restarted.close()
    finally:
        host.signal_group(record.pid, record.create_time, signal.SIGKILL)
        host.close()


def _end_connections_once_running(nodes: NamespacedNodes, argv: list[str], wait_seconds: float = 120.0) -> None:
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        if any(process.info["cmdline"] == argv for process in psutil.process_iter(["cmdline"])):
            break
        time.sleep(0.1)
    nodes.end_connections()


def test_a_dropped_connection_mid_call_is_an_interrupted_call(nodes: NamespacedNodes, tmp_path: Path) -> None:
    host = nodes.host(0)
    context = _context(tmp_path, host)
    # The connection is dropped once the remote command runs (the nodes share this machine's processes), not
    # after a fixed delay: under load the call may not have reached the node yet, which is another case.
    dropper = threading.Thread(target=_end_connections_once_running, args=(nodes, ["sleep", "20.25"]))
    dropper.start()
    try:
        result = default_registry().execute("shell", {"command": "sleep 20.25; echo done"}, context)
    finally:
        dropper.join()
    assert not result.ok and result.interrupted
    assert "verify its effect" in (result.error or "")
    # A start whose answer was lost leaves a marked process; after the interruption it is adopted, not doubled.
    spawned = host.spawn(
        ["sleep", "300"],
        env={SPAWN_MARKER: json.dumps({"run": context.state.run_id, "name": "lost"})},
        log_path=Path(nodes.remote_dir) / "lost.log",
    )
    try:
        notes = adopt_unrecorded(context.state, [host])
        assert any("never recorded; adopted" in note for note in notes)
        assert [record.pid for record in context.state.processes] == [spawned.pid]
        assert adopt_unrecorded(context.state, [host]) == []  # already known: not adopted twice
    finally:
        host.signal_group(spawned.pid, spawned.create_time, signal.SIGKILL)
        host.close()


def test_a_changed_host_key_is_refused_and_becomes_a_question(nodes: NamespacedNodes, tmp_path: Path) -> None:
    fresh = Path(tempfile.mkdtemp(prefix="opsloop-cm-", dir="/tmp"))  # no shared connection to ride on
    nodes.cluster.restart_sshd(1, new_host_key=True)
    try:
        host = nodes.host(1, control_dir=fresh)
        with pytest.raises(HostKeyRefused) as refused:
            host.hello()
        assert refused.value.needs_human
        assert any("Offending" in line for line in refused.value.evidence)
        with pytest.raises(NeedsApproval, match="host key of node1 changed"):
            default_registry().execute("probe_system", {}, _context(tmp_path, host))
        state_dir = tmp_path / "cli-state"
        nodes.write_agent_toml(state_dir)
        environment = {**nodes.environment(), "OPSLOOP_SSH_CONTROL_DIR": str(fresh)}
        answer = run_agent("tool", "probe_system", "--state-dir", state_dir, "--host", "node1", environment=environment)
        assert answer.returncode == 3, answer.stderr
        assert "needs_approval" in json.loads(answer.stdout)
    finally:
        nodes.end_connections(fresh)
        shutil.rmtree(fresh, ignore_errors=True)
        known = nodes.cluster.home / ".ssh" / "known_hosts"  # the test trusts the new key for the tests after it
        lines = [
            line for line in known.read_text().splitlines() if not line.startswith(f"{nodes.cluster.nodes[1].address} ")
        ]
        new_key = (nodes.cluster.node_dir(1) / "host_key.pub").read_text().strip()
        known.write_text("\n".join([*lines, f"{nodes.cluster.nodes[1].address} {new_key}"]) + "\n")


def test_an_unreachable_host_is_reported_as_such(nodes: NamespacedNodes, tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    nodes.write_agent_toml(state_dir)
    nowhere = "ssh://root@" + nodes.cluster.nodes[0].address.rsplit(".", 1)[0] + ".77"  # no node has it
    started = time.monotonic()
    checked = run_agent(
        "tool",
        "check_nodes",
        "--state-dir",
        state_dir,
        "--host",
        "node0",
        "--host",
        nowhere,
        environment=nodes.environment(),
        timeout=120,
    )
    assert checked.returncode == 0, checked.stderr
    output = json.loads(checked.stdout)["output"]
    assert not output["ready"]
    assert any(
        problem.startswith(f"node 1 ({nowhere.removeprefix('ssh://')}) cannot be reached")
        for problem in output["cluster"]["problems"]
    )
    assert time.monotonic() - started < 60  # a finding within the connect timeout, not a hang
