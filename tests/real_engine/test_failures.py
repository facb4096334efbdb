"""Real vLLM failures provoked live and diagnosed from the real log: by launch_engine (which watches the
start-up), by engine_status afterwards and by ``agent diagnose --exit-code``, which must all agree."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from support.agent_engine import AgentEngine, end_engines, engine_config, launch
from support.cli import run_agent
from support.real_engine import RealEngine


def provoke(engine: RealEngine, state_dir: Path, **fields: Any) -> AgentEngine:
    """launch_engine with a config that must fail during start-up; the engine's exit has been diagnosed."""
    try:
        failed = launch(engine, state_dir, "failing", engine_config(engine, **fields))
    finally:
        end_engines(state_dir)
    assert failed.launch["ok"], failed.launch
    readiness = failed.output["readiness"]
    assert readiness["outcome"] == "exited", readiness
    return failed


def assert_all_agree(failed: AgentEngine, expected: str) -> dict[str, Any]:
    """The launch's diagnosis, engine_status's and `agent diagnose --exit-code`'s name the same class."""
    readiness = failed.output["readiness"]
    assert readiness["diagnosis"]["class"] == expected, readiness["diagnosis"]
    status = failed.status()
    assert (status["alive"], status["state"]) == (False, "exited")
    assert status["diagnosis"]["class"] == expected, status["diagnosis"]
    completed = run_agent("diagnose", "--json", "--exit-code", str(status["exit_code"]), failed.log_path)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["class"] == expected
    diagnosis: dict[str, Any] = readiness["diagnosis"]
    return diagnosis


def test_a_port_another_process_listens_on_is_refused_before_starting(real_engine: RealEngine, tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        refused = launch(real_engine, tmp_path / "state", "engine", engine_config(real_engine, port=port))
    assert refused.launch["ok"] is False
    assert refused.launch["error"].startswith("port_in_use: ") and "did not start" in refused.launch["error"]


def test_a_port_another_process_holds_is_diagnosed_from_the_engines_log(
    real_engine: RealEngine, tmp_path: Path
) -> None:
    """Bound but not listening: nothing answers, so only the engine's own bind fails (Errno 98)."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
        failed = provoke(real_engine, tmp_path / "state", port=port)
    diagnosis = assert_all_agree(failed, "port_in_use")
    assert "Address already in use" in diagnosis["key_line"]
    assert diagnosis["remedies"][0]["action"] == {"pick_free_port": True}


def test_a_model_directory_that_does_not_exist(real_engine: RealEngine, tmp_path: Path) -> None:
    failed = provoke(real_engine, tmp_path / "state", model_path=str(tmp_path / "no-such-model"))
    diagnosis = assert_all_agree(failed, "model_load_error")
    assert "no-such-model" in diagnosis["key_line"]


def test_a_max_model_len_larger_than_the_model_allows(real_engine: RealEngine, tmp_path: Path) -> None:
    failed = provoke(real_engine, tmp_path / "state", context_length=4096)
    diagnosis = assert_all_agree(failed, "config_error")
    assert "max_model_len" in diagnosis["root_cause"]["message"]


def test_a_kv_cache_space_larger_than_ram(real_engine: RealEngine, tmp_path: Path) -> None:
    config = engine_config(real_engine)
    failed = provoke(
        real_engine,
        tmp_path / "state",
        disable_cuda_graph=True,  # eager with an explicit KV size skips the warm-up before the check
        env={**config["env"], "VLLM_CPU_KVCACHE_SPACE": "4096"},
    )
    diagnosis = assert_all_agree(failed, "cuda_oom")
    assert "less than requested memory for kv" in diagnosis["key_line"]
    assert diagnosis["remedies"][0]["action"] == {"scale_env": {"VLLM_CPU_KVCACHE_SPACE": 0.5}}
