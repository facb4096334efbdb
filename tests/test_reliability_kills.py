"""Kill what the agent depends on, mid-way: the engine (while loading, while serving), the drafter training
job, and the notification targets. Each must be detected and handled (diagnosed, retried or escalated),
never ignored: no run may end "done" on the strength of a dead engine, a lost job or an unsent message.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli import HttpReceiver, SmtpSink, journal_records, run_agent, start_agent, wait_for, write_script
from support.reliability import engine_identities, kill_state_processes

from agent.state import ProjectState
from agent.store import StateStore
from tools.base import ToolContext, ToolSettings
from tools.catalog import default_registry
from tools.hosts.sim.host import SimHost

REGISTRY = default_registry()


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "state"
    yield directory
    kill_state_processes(directory)


def _intent(state_dir: Path, tool: str) -> bool:
    return any(entry.get("kind") == "intent" and entry.get("tool") == tool for entry in journal_records(state_dir))


def _results(state_dir: Path, tool: str) -> list[dict[str, Any]]:
    return [
        entry["result"]
        for entry in journal_records(state_dir)
        if entry.get("kind") == "result" and entry.get("tool") == tool
    ]


def _kill_engine_during(state_dir: Path, tool: str) -> subprocess.Popen[str]:
    """Start a runbook bring-up and SIGKILL its engine once ``tool`` is running."""
    agent = start_agent(
        "run", "--goal", "serve the model", "--sim", "h100-healthy", "--policy", "runbook", "--state-dir", state_dir
    )
    assert wait_for(lambda: _intent(state_dir, tool) and bool(engine_identities(state_dir)), timeout=90)
    time.sleep(0.3)
    for engine in engine_identities(state_dir):
        os.kill(engine[0], signal.SIGKILL)
    agent.communicate(timeout=120)
    return agent


def test_an_engine_killed_while_loading_is_diagnosed_and_escalated(state_dir: Path) -> None:
    agent = _kill_engine_during(state_dir, "launch_engine")
    assert agent.returncode == 3
    launch = _results(state_dir, "launch_engine")[-1]  # an earlier one may have met a busy port
    readiness = launch["output"]["readiness"]
    assert readiness["outcome"] == "exited" and readiness["diagnosis"]["class"] == "process_killed"
    assert "SIGKILL" in readiness["diagnosis"]["key_line"]
    state = json.loads((state_dir / "latest.json").read_text())
    [question] = [item for item in state["questions"] if item["answer"] is None]
    assert any("SIGKILL" in line for line in question["evidence"]), question


def test_an_engine_killed_while_serving_is_not_benchmarked_as_if_alive(state_dir: Path) -> None:
    """Found by this test: both benchmarks reported "every request failed" and the run ended done."""
    agent = _kill_engine_during(state_dir, "run_bench")
    assert agent.returncode == 3
    state = json.loads((state_dir / "latest.json").read_text())
    [question] = [item for item in state["questions"] if item["answer"] is None]
    assert question["kind"] == "tool_error" and "every request failed" in question["question"]
    resumed = run_agent("resume", state_dir, "--answer", "retry", timeout=120)  # the human says: try again
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    state = json.loads((state_dir / "latest.json").read_text())
    ready = [record for record in state["processes"] if record["state"] == "ready"]
    assert len(ready) == 1 and ready[0]["name"] != "engine-1", "the engine was not relaunched"
    kept = state["loop"]["policy_state"]["runbook"]["benchmarks"]
    levels = {record["id"]: record["metrics"]["levels"][0] for record in state["benchmarks"]}
    assert all(levels[benchmark]["completed"] > 0 for benchmark in kept.values())


MANAGED_LOCAL = {"deployment": {"disaggregated": {"managed_local": {"trainer_cuda_visible_devices": ["0"]}}}}


def test_a_drafter_job_killed_mid_training_is_reported_failed(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state = ProjectState(goal="train a drafter")
    store = StateStore(state_dir)
    context = ToolContext(
        state=state,
        state_dir=state_dir,
        host=SimHost.from_scenario("vllm-eagle3", state_dir),
        settings=ToolSettings(engine_python=sys.executable, load_timeout_seconds=60, hang_after_seconds=5),
        checkpoint=lambda: store.save(state),
    )
    try:
        assert REGISTRY.execute("probe_system", {}, context).ok
        environment = state.environment
        [target] = [model for model in environment.models if model.role == "target"]
        launched = REGISTRY.execute(
            "launch_engine",
            {
                "config": {
                    "engine": "vllm",
                    "model_path": target.path,
                    "served_model_name": target.name,
                    "port": 39_181,
                    "tp_size": len(environment.gpus),
                },
                "poll_seconds": 0.2,
                "health_every_seconds": 0.5,
            },
            context,
        )
        assert launched.ok and launched.output is not None
        assert launched.output["readiness"]["outcome"] == "ready", launched.output["readiness"]
        started = REGISTRY.execute(
            "train_drafter",
            {
                "name": "drafter-1",
                "target_model_path": target.path,
                "target_server": "127.0.0.1:39181",
                "served_model_name": target.name,
                "num_samples": 48,
                # Many epochs: training on the stand-in takes minutes, so the kill always lands mid-training (two
                # epochs took a fraction of a second, and a loaded machine could see the job finish first).
                "num_epochs": 5000,
                "wait": False,
                "specforge_dir": environment.specforge_dir,
                "draft_model_config": environment.specforge_draft_configs[0],
                "input_data_path": environment.specforge_datasets[0],
                "extra_config": MANAGED_LOCAL,
            },
            context,
        )
        assert started.ok, started.error
        job = next(record for record in state.processes if record.kind == "drafter_training")

        def training() -> bool:
            status = REGISTRY.execute("drafter_status", {"name": "drafter-1"}, context)
            return status.ok and status.output is not None and status.output["progress"]["stage"] == "train"

        assert wait_for(training, timeout=60, interval=0.2), "the job never reached its training stage"
        os.killpg(job.pid, signal.SIGKILL)
        assert wait_for(lambda: not context.host.status(job.pid, job.create_time).alive, timeout=10)
        status = REGISTRY.execute("drafter_status", {"name": "drafter-1"}, context)
        assert status.ok and status.output is not None
        assert status.output["state"] == "failed" and status.output["exported_path"] is None
        assert "exit code -9" in status.output["progress"]["error"]
        assert any(finding.summary.startswith("drafter drafter-1 failed in stage train") for finding in state.findings)
        engine = next(record for record in state.processes if record.kind == "engine")
        assert context.host.status(engine.pid, engine.create_time).alive, "the target engine was touched"
    finally:
        store.save(state)
        kill_state_processes(state_dir)


# A webhook target that dies (SIGKILL) the moment a notification arrives, before answering it.
_DYING_RECEIVER = """
import os, signal, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        open(sys.argv[2], "a").write("received\\n")
        os.kill(os.getpid(), signal.SIGKILL)
server = HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print("ready", flush=True)
server.serve_forever()
"""


def test_notification_targets_killed_mid_way_are_recorded_and_do_not_stop_the_run(
    tmp_path: Path, http_receiver: HttpReceiver
) -> None:
    smtp_sink = SmtpSink().start()  # stopped mid-way by this test
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    port, received = 39_191, tmp_path / "received.txt"
    receiver = subprocess.Popen(
        [sys.executable, "-c", _DYING_RECEIVER, str(port), str(received)], stdout=subprocess.PIPE, text=True
    )
    assert receiver.stdout is not None and receiver.stdout.readline().strip() == "ready"
    (state_dir / "agent.toml").write_text(
        f'[notify]\nchannels = ["webhook:http://127.0.0.1:{port}/hook", "webhook:{http_receiver.url()}", '
        f'"email:oncall@example.test"]\nattempts = 2\nretry_wait_seconds = 0.01\ntimeout_seconds = 30\n'
        f'[notify.smtp]\nhost = "127.0.0.1"\nport = {smtp_sink.port}\ntimeout_seconds = 30\n'
    )
    script = write_script(
        tmp_path / "plan.json", [{"ask": "Reset GPU 3?", "evidence": ["Xid 79"]}, {"finish": "served"}]
    )
    try:
        blocked = run_agent("run", "-g", "g", "--script", script, "--state-dir", state_dir)
        assert blocked.returncode == 3, blocked.stderr
        assert receiver.wait(timeout=10) == -signal.SIGKILL and received.read_text() == "received\n"
        assert len(smtp_sink.messages) == 1
        smtp_sink.stop()  # the mail server goes away before the next message
        done = run_agent("resume", state_dir, "--answer", "no")
    finally:
        if receiver.poll() is None:
            receiver.kill()
        receiver.wait()
        receiver.stdout.close()
    assert done.returncode == 0, done.stderr
    assert "failed after 2 attempt(s)" in blocked.stderr and "failed after 2 attempt(s)" in done.stderr
    state = json.loads((state_dir / "latest.json").read_text())
    outcome = {
        (item["event"], item["channel"].split(":")[0], f":{port}/" in item["channel"]): (
            item["delivered"],
            item["attempts"],
            bool(item["error"]),
        )
        for item in state["notifications"]
    }
    assert outcome[("blocked", "webhook", True)] == (False, 2, True)  # killed while receiving
    assert outcome[("blocked", "webhook", False)] == (True, 1, False)
    assert outcome[("blocked", "email", False)] == (True, 1, False)
    assert outcome[("done", "webhook", True)] == (False, 2, True)  # gone
    assert outcome[("done", "email", False)] == (False, 2, True)  # mail server stopped
    assert outcome[("done", "webhook", False)] == (True, 1, False)
    assert [request.json()["event"] for request in http_receiver.requests] == ["blocked", "done"]
