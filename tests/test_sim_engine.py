"""The engine stand-in as a real process: crash, hang, slow-but-live load, flag and environment rules."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.sim import EngineProcess, free_port, http_get, wait_healthy, write_scenario

from twin.ledger import memory_in_use

SM120_RULES = """
[[rules]]
name = "P2P all-reduce hangs"
outcome = "hang"
at = "init"
[rules.when.env]
NCCL_P2P_DISABLE = { not_in = ["1"] }

[[rules]]
name = "no SM120 kernels"
outcome = "crash"
at = "cuda_graph"
exit_code = 3
log = ["{prefix}Scheduler hit an exception: Traceback (most recent call last):",
       "RuntimeError: {attention_backend} kernel: Unsupported architecture"]
[rules.when.flags]
"--attention-backend" = ["fa3", "flashmla"]
"""


@pytest.fixture
def engines() -> Iterator[list[EngineProcess]]:
    started: list[EngineProcess] = []
    yield started
    for engine in started:
        engine.stop()


def _wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the engine"
        time.sleep(0.02)


def _start(
    engines: list[EngineProcess],
    scenario: Path,
    sim_root: Path,
    flags: list[str],
    engine: str = "sglang",
    env: dict[str, str] | None = None,
) -> EngineProcess:
    process = EngineProcess(scenario, sim_root, flags, engine, env)
    engines.append(process)
    return process


def test_crash_rule_matches_the_real_flag_and_ends_with_engine_lines(
    tmp_path: Path, engines: list[EngineProcess]
) -> None:
    scenario = write_scenario(tmp_path, rules=SM120_RULES)
    flags = ["--model-path", "test-org/Test-30B", "--tp", "2", "--attention-backend", "fa3", "--port", str(free_port())]
    engine = _start(engines, scenario, tmp_path / "sim", flags, env={"NCCL_P2P_DISABLE": "1"})
    assert engine.wait_exit() == 3
    log = engine.log()
    assert "Load weight begin" in log and "Loading safetensors checkpoint shards: 100% Completed | 8/8" in log
    assert "KV Cache is allocated. #tokens:" in log and "Capture cuda graph begin" in log
    assert "RuntimeError: fa3 kernel: Unsupported architecture" in log
    assert "Capture cuda graph end" not in log and "fired up" not in log
    assert memory_in_use(tmp_path / "sim", 2) == [0, 0]  # a dead engine holds no GPU memory


def test_nccl_p2p_disable_turns_a_hang_into_a_serving_engine(tmp_path: Path, engines: list[EngineProcess]) -> None:
    scenario = write_scenario(tmp_path, rules=SM120_RULES)
    port = free_port()
    flags = [
        "--model-path",
        "test-org/Test-30B",
        "--tp-size",
        "2",
        "--attention-backend",
        "triton",
        "--port",
        str(port),
    ]
    hung = _start(engines, scenario, tmp_path / "sim", flags, env={"NCCL_DEBUG": "INFO"})
    _wait_for(lambda: "via P2P/CUMEM" in hung.log())
    time.sleep(0.5)  # five times the whole start-up of this scenario
    assert hung.process.poll() is None
    log = hung.log()
    assert log.rstrip().endswith("via P2P/CUMEM") and "Init torch distributed begin." in log
    assert "Init torch distributed ends" not in log
    held = memory_in_use(tmp_path / "sim", 2)
    time.sleep(0.3)
    assert memory_in_use(tmp_path / "sim", 2) == held and held[0] > 0  # frozen, not growing
    hung.stop()

    serving = _start(engines, scenario, tmp_path / "sim", flags, env={"NCCL_P2P_DISABLE": "1", "NCCL_DEBUG": "INFO"})
    wait_healthy(port, serving.process, log=serving.log_path)
    log = serving.log()
    assert "via SHM/direct/direct" in log and "The server is fired up and ready to roll!" in log
    assert "Custom allreduce is disabled" not in log  # only beyond two PCIe GPUs


def test_a_slow_load_is_silent_but_gpu_memory_keeps_growing(tmp_path: Path, engines: list[EngineProcess]) -> None:
    # 30 s of loading with one progress line at its start: silent for far longer than the test watches.
    scenario = write_scenario(tmp_path, time_scale=1000.0, load=30000.0, progress_interval=30000.0)
    flags = ["--model-path", "test-org/Test-30B", "--tp", "2", "--port", str(free_port())]
    engine = _start(engines, scenario, tmp_path / "sim", flags)
    _wait_for(lambda: "0% Completed | 0/8" in engine.log())
    first_memory, first_log = memory_in_use(tmp_path / "sim", 2)[0], engine.log()
    _wait_for(lambda: memory_in_use(tmp_path / "sim", 2)[0] > first_memory + 2048)  # the weights keep arriving
    assert engine.process.poll() is None
    assert "Load weight begin" in first_log
    assert engine.log() == first_log  # ... while nothing is printed: it looks hung


def test_unknown_flags_fail_like_argparse_and_aliases_resolve(tmp_path: Path, engines: list[EngineProcess]) -> None:
    scenario = write_scenario(tmp_path)
    bad = _start(engines, scenario, tmp_path / "sim", ["--model-path", "test-org/Test-30B", "--no-such-flag"])
    assert bad.wait_exit() == 2
    assert "unrecognized arguments: --no-such-flag" in bad.log()
    modern = write_scenario(tmp_path, name="modern", sglang="0.5.23")
    ambiguous = _start(engines, modern, tmp_path / "sim2", ["--model", "test-org/Test-30B", "--cuda-graph-max-bs", "8"])
    assert ambiguous.wait_exit() == 2
    assert "ambiguous option: --cuda-graph-max-bs" in ambiguous.log()


def test_memory_physics_out_of_memory_and_wrong_model(tmp_path: Path, engines: list[EngineProcess]) -> None:
    scenario = write_scenario(tmp_path, engine_extra="activation_memory_mib = 20000")
    flags = ["--model-path", "test-org/Test-30B", "--tp", "2", "--port", str(free_port())]
    oom = _start(engines, scenario, tmp_path / "sim", flags)
    assert oom.wait_exit() == 1
    assert "torch.OutOfMemoryError: CUDA out of memory" in oom.log()
    lowered = _start(engines, scenario, tmp_path / "sim", [*flags, "--mem-fraction-static", "0.6"])
    port = int(flags[-1])
    wait_healthy(port, lowered.process, log=lowered.log_path)
    lowered.stop()
    missing = _start(engines, scenario, tmp_path / "sim", ["--model-path", "/no/such/model", "--tp", "2"])
    assert missing.wait_exit() == 1
    assert "Incorrect path_or_model_id: '/no/such/model'" in missing.log()


def test_vllm_command_line_and_start_up_lines(tmp_path: Path, engines: list[EngineProcess]) -> None:
    scenario = write_scenario(tmp_path)
    port = free_port()
    engine = _start(
        engines, scenario, tmp_path / "sim", ["test-org/Test-30B", "-tp", "2", "--port", str(port)], engine="vllm"
    )
    wait_healthy(port, engine.process, log=engine.log_path)
    log = engine.log()
    assert "vLLM API server version 0.33.0" in log and f"Starting vLLM server on http://127.0.0.1:{port}" in log
    assert "Application startup complete." in log and "GPU KV cache size:" in log
    status, body = http_get(f"http://127.0.0.1:{port}/version")
    assert status == 200 and "0.33.0" in body
