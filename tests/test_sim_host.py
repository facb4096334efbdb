"""SimHost: the scenario's GPUs and host facts, command translation, and real stand-in processes."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

from support.sim import wait_healthy, write_scenario

from agent.state import ProjectState
from tools.base import ToolContext, ToolSettings
from tools.hosts.sim.host import SimHost
from tools.hosts.sim.translate import Translator
from tools.probe import ProbeSystemArgs, ProbeSystemTool


def test_probe_gpus_reports_the_seed_hardware(tmp_path: Path) -> None:
    host = SimHost.from_scenario("kimi-sm120", tmp_path)
    probe = host.probe_gpus()
    assert len(probe.gpus) == 8 and probe.interconnect == "pcie" and probe.error is None
    assert {gpu.compute_capability for gpu in probe.gpus} == {"12.0"}
    assert probe.gpus[0].name == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert probe.gpus[0].memory_total_mib == 97887 and probe.gpus[0].memory_used_mib == 0
    assert len(probe.topology) == 28 and {link.link for link in probe.topology} == {"NODE"}
    assert (probe.driver_version, probe.cuda_version) == ("570.133.20", "12.8")
    assert host.gpu_memory_used_mib() == [0] * 8 and host.time_scale == 1000.0


def test_a_faulty_gpu_shows_in_the_probe_nvidia_smi_and_dmesg(tmp_path: Path) -> None:
    host = SimHost.from_scenario("gpu-fault", tmp_path)
    faulty = host.probe_gpus().gpus[3]
    assert faulty.ecc_errors_uncorrected == 2
    assert faulty.xid_errors == [
        "Xid 48: Double Bit ECC Error (DBE)",
        "Xid 63: ECC page retirement or row remapping recording event",
    ]
    query = host.run(
        ["nvidia-smi", "--query-gpu=index,ecc.errors.uncorrected.volatile.total", "--format=csv,noheader"], timeout=30
    )
    assert query.exit_code == 0 and query.stdout.splitlines()[3] == "3, 2"
    assert query.argv[0] == "nvidia-smi"  # the caller sees its own command
    kernel = host.run(["dmesg"], timeout=30)
    assert "NVRM: Xid (PCI:0000:61:00.0): 48, pid=2817, name=python3, Double Bit ECC Error (DBE)" in kernel.stdout


def test_translation_covers_the_real_command_lines(tmp_path: Path) -> None:
    translator = Translator(tmp_path / "s.toml", tmp_path / "root")
    prefix = [sys.executable, "-m"]
    sglang = translator.translate(["/venv/bin/python3", "-u", "-m", "sglang.launch_server", "--model-path", "m"])
    assert sglang[:3] == [*prefix, "twin.engine"] and sglang[-4:] == ["module", "--", "--model-path", "m"]
    assert translator.translate(["sglang", "serve", "--tp", "8"])[-5:] == ["--entry", "script", "--", "--tp", "8"]
    vllm = translator.translate(["/venv/bin/vllm", "serve", "model", "-tp", "8"])
    assert "--engine" in vllm and vllm[vllm.index("--engine") + 1] == "vllm" and vllm[-3:] == ["model", "-tp", "8"]
    old_vllm = translator.translate(["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"])
    assert old_vllm[-3:] == ["--", "--model", "m"]
    train = translator.translate(["specforge", "train", "--config", "run.yaml"])
    assert train[2] == "twin.specforge" and train[-4:] == ["--", "train", "--config", "run.yaml"]
    regenerate = translator.translate(["python", "/src/SpecForge/scripts/regenerate_train_data.py", "--model", "m"])
    assert regenerate[2] == "twin.regenerate" and regenerate[-3:] == ["--", "--model", "m"]
    snippet = translator.translate(["/opt/env/bin/python3.11", "-c", "print(1)", "arg"])
    assert snippet[2] == "twin.fakepython" and snippet[-3:] == ["-c", "print(1)", "arg"]
    assert translator.translate(["nvidia-smi", "-L"])[-3:] == ["--", "nvidia-smi", "-L"]
    assert translator.translate(sglang) == sglang  # already translated
    assert translator.translate(["ls", "-l"]) == ["ls", "-l"]
    assert translator.translate(["python", "script.py"]) == ["python", "script.py"]


def test_probe_system_sees_the_scenario_through_the_host(tmp_path: Path) -> None:
    host = SimHost.from_scenario("kimi-sm120", tmp_path)
    state = ProjectState(goal="serve kimi with eagle3")
    context = ToolContext(
        state=state,
        state_dir=tmp_path,
        host=host,
        settings=ToolSettings(engine_python="/opt/engines/sglang/bin/python"),
    )
    ProbeSystemTool().run(ProbeSystemArgs(), context)
    environment = state.environment
    assert environment.host == "sim" and len(environment.gpus) == 8
    assert environment.cpu_model == "AMD EPYC 9335 32-Core Processor" and environment.cpu_cores == 64
    assert environment.ram_gib == 449.0 and environment.disk_free_gib == 2850.0
    assert environment.packages["sglang"] == "0.5.10" and environment.packages["specforge"] is None
    # SpecForge has its own environment in the checkout (it pins torch 2.11.0 and sglang 0.5.14).
    assert environment.specforge_python == str(host.layout.specforge_bin(host.scenario) / "python")
    assert environment.specforge_packages == {
        "specforge": "0.2.0",
        "torch": "2.11.0+cu128",
        "sglang": "0.5.14",
        "transformers": "5.8.1",
    }
    assert environment.packages["nccl"] is None  # the scenario decides what is installed
    by_role = {model.role: model for model in environment.models}
    target, drafter = by_role["target"], by_role["drafter"]
    assert target.path == str(host.model_dir) and target.architecture == "KimiK25ForConditionalGeneration"
    assert (target.num_layers, target.num_experts, target.attention) == (61, 384, "mla")
    assert target.size_gib is not None and 500 < target.size_gib < 520  # 547 GB
    assert drafter.path == str(host.drafter_dirs()["AQ-MedAI/Kimi-K2-Instruct-eagle3"])
    checkout = Path(str(environment.specforge_dir))
    assert (checkout / "scripts" / "regenerate_train_data.py").is_file()
    assert json.loads((checkout / "configs" / "kimi-k25-eagle3.json").read_text())["vocab_size"] == 163840
    records = (checkout / "cache" / "dataset" / "sharegpt_train.jsonl").read_text().splitlines()
    assert len(records) == 48 and json.loads(records[0])["conversations"][0]["role"] == "user"
    listed = host.run(["sh", "-c", 'ls "$SPECFORGE_DIR/scripts"'], timeout=30)  # the host's own variables
    assert "prepare_data.py" in listed.stdout


def test_spawned_engine_holds_gpu_memory_until_it_stops(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path)
    host = SimHost.from_scenario(str(scenario), tmp_path / "state")
    port = 30000  # the simulated host's own port: served on a free real one, whatever holds 30000 here
    argv = [
        "/opt/engines/sglang/bin/python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        str(host.model_dir),
        "--tp-size",
        "2",
        "--port",
        str(port),
    ]
    spawned = host.spawn(argv, env={}, log_path=tmp_path / "engine.log")
    try:
        wait_healthy(host.endpoint("127.0.0.1", port)[1], log=tmp_path / "engine.log")
        used = host.gpu_memory_used_mib()
        assert used is not None and used[0] == used[1] and used[0] > 20_000  # 15 GB of weights + KV cache
        assert host.probe_gpus().gpus[1].memory_used_mib == used[1]
    finally:
        assert host.signal_group(spawned.pid, spawned.create_time, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while host.status(spawned.pid, spawned.create_time).alive and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host.gpu_memory_used_mib() == [0, 0]
    assert "The server is fired up and ready to roll!" in (tmp_path / "engine.log").read_text()


def test_an_engine_the_scenario_does_not_install_is_missing(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path)
    text = scenario.read_text().replace('vllm = "0.33.0"\n', "")
    scenario.write_text(text)
    host = SimHost.from_scenario(str(scenario), tmp_path / "state")
    result = host.run(["/opt/env/bin/vllm", "serve", "m"], timeout=30)
    assert result.exit_code == 127 and "vllm: command not found" in result.stderr
    versions = host.run(["python3", "-c", "import importlib.metadata as m; print(m.version('sglang'))"], timeout=30)
    assert versions.stdout.strip() == "0.5.10"
