"""Helpers for the simulated-host tests: small fast scenario files and engine stand-in processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]

# Two PCIe GPUs, a 30 GB model, start-up in well under a second of real time.
BASE_SCENARIO = """
format_version = {format_version}
name = "{name}"
description = "test scenario"
time_scale = {time_scale}

[host]
cpu_model = "Test CPU 16-Core"
cpu_cores = 16
ram_gib = 128.0
disk_free_gib = 900.0
driver_version = "570.1"
cuda_version = "12.8"
interconnect = "pcie"
{host_extra}

[[host.gpus]]
name = "NVIDIA H100 80GB HBM3"
compute_capability = "9.0"
memory_mib = 81559
count = 2

[packages]
sglang = "{sglang}"
vllm = "0.33.0"
torch = "2.9.1"
{specforge_in_engine}

[model]
name = "test-org/Test-30B"
dir_name = "Test-30B"
architecture = "LlamaForCausalLM"
model_type = "llama"
size_gb = 30.0
num_layers = 48
attention = "{attention}"
num_shards = 8
kv_bytes_per_token = 131072

[[drafters]]
name = "test-org/generic-eagle3"
dir_name = "generic-eagle3"
accept_length = 1.45

[engine]
default_mem_fraction_static = 0.85
{engine_extra}

[engine.phases]
init = 10.0
load = {load}
progress_interval = {progress_interval}
kv_cache = 5.0
cuda_graph = 20.0
warmup = 5.0
draft_load = 5.0

[performance]
single_stream_tok_s = {single}
peak_tok_s = {peak}
ttft_ms = {ttft_ms}
prefill_tok_s = 50000.0

[training]
seconds_per_step = 1.0
generic_accept_length = 1.8
target_accept_length = 2.95
steps_to_converge = 60
gpu_memory_gib = {training_memory}
dataset_samples = 12
{training_extra}
"""

DEFAULTS: dict[str, Any] = {
    "format_version": 1,
    "name": "test-sim",
    "time_scale": 2000.0,
    "host_extra": "",
    "sglang": "0.5.10",
    "attention": "gqa",
    "engine_extra": "",
    "load": 200.0,
    "progress_interval": 100.0,
    "single": 100.0,
    "peak": 400.0,
    "ttft_ms": 50.0,
    "training_memory": 0.0,
    "training_extra": "",
    "specforge_in_engine": 'specforge = "0.2.0"',  # bare `specforge` commands run in the engine environment
}
PINNED = {"specforge": "0.2.0", "torch": "2.11.0", "sglang": "0.5.14", "transformers": "5.8.1"}


def specforge_training(
    packages: dict[str, str] | None = None, prepare_script: str = "strategy", error: str | None = None
) -> str:
    """``training_extra`` for a host with SpecForge's own environment (<checkout>/.venv); by default 0.2.0
    with its pins met and the newest flag set of the preparation script."""
    listed = ", ".join(f'"{name}" = "{version}"' for name, version in (packages or PINNED).items())
    broken = f"error = {json.dumps(error)}\n" if error else ""
    return f'prepare_script = "{prepare_script}"\n\n[training.environment]\npackages = {{ {listed} }}\n{broken}'


def scenario_text(rules: str = "", **values: Any) -> str:
    return BASE_SCENARIO.format(**{**DEFAULTS, **values}) + "\n" + rules


def write_scenario(directory: Path, rules: str = "", **values: Any) -> Path:
    path = directory / f"{values.get('name', DEFAULTS['name'])}.toml"
    path.write_text(scenario_text(rules, **values), encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def child_environment(**extra: str) -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("NCCL_", "CUDA_"))}
    environment["PYTHONPATH"] = str(REPO_ROOT)
    environment.update(extra)
    return environment


class EngineProcess:
    """The engine stand-in started directly (as the simulated host would), logging to a file."""

    def __init__(
        self,
        scenario: Path,
        sim_root: Path,
        flags: list[str],
        engine: str = "sglang",
        env: dict[str, str] | None = None,
    ) -> None:
        self.log_path = sim_root.parent / f"engine-{free_port()}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        argv = [
            sys.executable,
            "-m",
            "twin.engine",
            "--scenario",
            str(scenario),
            "--sim-root",
            str(sim_root),
            "--engine",
            engine,
            "--",
            *flags,
        ]
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT, env=child_environment(**(env or {}))
            )

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8")

    def wait_exit(self, timeout: float = 120.0) -> int:
        return self.process.wait(timeout=timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8")


def http_post(url: str, body: dict[str, Any], timeout: float = 30.0) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def wait_healthy(
    port: int, process: subprocess.Popen[Any] | None = None, timeout: float = 120.0, log: Path | None = None
) -> None:
    """Poll /health; the timeout is generous because a loaded test machine slows every start-up."""
    deadline = time.monotonic() + timeout

    def tail() -> str:
        return log.read_text(encoding="utf-8")[-2000:] if log is not None and log.exists() else ""

    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"engine exited with {process.returncode} before it was ready\n{tail()}")
        try:
            if http_get(f"http://127.0.0.1:{port}/health", timeout=1.0)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"engine on port {port} not healthy after {timeout} s\n{tail()}")
