"""train_drafter / drafter_status against stand-in SpecForge scripts that print real-format progress."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.bench import fake_server
from support.tool_context import make_context, wait_for

from tools.base import ToolContext, ToolRegistry, ToolResult
from tools.drafter.progress import DrafterProgress, apply_line
from tools.drafter.tools import DrafterStatusTool, TrainDrafterTool
from tools.drafter.yaml_text import to_yaml
from tools.processes import stop_process
from tools.records import ProcessRecord
from twin.specforge.config import parse_yaml

FAKES = Path(__file__).resolve().parent / "support" / "fakes"
REPO_ROOT = Path(__file__).resolve().parents[1]


MANAGED_LOCAL = {"deployment": {"disaggregated": {"managed_local": {"trainer_cuda_visible_devices": ["0"]}}}}


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, str]:
    """An engine environment, a separate SpecForge environment (its python sees an installed specforge
    0.2.0 distribution; bin/ holds a stand-in specforge), a SpecForge checkout, a draft config and a few
    conversations."""
    engine_bin = tmp_path / "env" / "bin"
    engine_bin.mkdir(parents=True)
    (engine_bin / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    site = tmp_path / "specforge-env" / "site"
    (site / "specforge-0.2.0.dist-info").mkdir(parents=True)
    (site / "specforge-0.2.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: specforge\nVersion: 0.2.0\n"
    )
    bin_dir = tmp_path / "specforge-env" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    (bin_dir / "specforge").write_text(f"#!{sys.executable}\n" + (FAKES / "specforge.py").read_text())
    for program in [*bin_dir.iterdir(), *engine_bin.iterdir()]:
        program.chmod(0o755)
    checkout = tmp_path / "SpecForge"
    (checkout / "scripts").mkdir(parents=True)
    # The checkout's data script is the digital twin's stand-in, run by file path like the real one.
    (checkout / "scripts" / "regenerate_train_data.py").write_text(
        f"import sys\nsys.path.insert(0, {str(REPO_ROOT)!r})\nfrom twin.regenerate import main\nsys.exit(main())\n"
    )
    draft = tmp_path / "draft.json"
    draft.write_text(json.dumps({"architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1}))
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(
        "".join(
            json.dumps(
                {
                    "id": str(index),
                    "conversations": [
                        {"role": "user", "content": f"question {index}"},
                        {"role": "assistant", "content": "old answer"},
                    ],
                }
            )
            + "\n"
            for index in range(5)
        )
    )
    return {
        "python": str(engine_bin / "python"),
        "specforge_python": str(bin_dir / "python"),
        "specforge_dir": str(checkout),
        "draft_model_config": str(draft),
        "input_data_path": str(prompts),
    }


def make(tmp_path: Path, setup: dict[str, str]) -> ToolContext:
    context = make_context(tmp_path)
    context.settings.engine_python = setup["python"]
    return context


def call(context: ToolContext, name: str, arguments: dict[str, object]) -> ToolResult:
    return ToolRegistry([TrainDrafterTool(), DrafterStatusTool()]).execute(name, arguments, context)


def pipeline_args(setup: dict[str, str], **extra: object) -> dict[str, object]:
    return {
        "name": "d1",
        "target_model_path": "fake-model",
        "draft_model_config": setup["draft_model_config"],
        "specforge_dir": setup["specforge_dir"],
        "input_data_path": setup["input_data_path"],
        "specforge_python": setup["specforge_python"],
        "extra_config": MANAGED_LOCAL,
        "max_steps": 40,
        "log_interval": 10,
        "learning_rate": 5e-5,
        "poll_seconds": 0.1,
        **extra,
    }


def test_full_pipeline_regenerates_trains_and_exports(tmp_path: Path, setup: dict[str, str]) -> None:
    context = make(tmp_path, setup)
    with fake_server() as url, listening() as master, listening() as metadata:
        port = int(url.rsplit(":", 1)[1])
        context.state.processes.append(
            ProcessRecord(
                name="engine",
                pid=1,
                create_time=0.0,
                log_path="x",
                port=port,
                kind="engine",
                state="ready",
                argv=["python", "-m", "sglang.launch_server", "--enable-spec-capture", "--chunked-prefill-size", "-1"],
            )
        )
        services = {
            "deployment": {
                "disaggregated": {
                    "mooncake_master_server_addr": master,
                    "mooncake_metadata_server": f"http://{metadata}/metadata",
                }
            }
        }
        result = call(
            context, "train_drafter", pipeline_args(setup, wait=True, wait_timeout_seconds=60, extra_config=services)
        )
    assert result.ok, result.error
    output = result.output
    assert output is not None and output["state"] == "done", output
    exported = Path(output["exported_path"])
    assert (exported / "config.json").is_file() and (exported / "model.safetensors").is_file()
    progress = output["progress"]
    assert progress["step"] == 40 and progress["loss"] == pytest.approx(1.0)
    assert progress["per_position_accuracy"] == [0.7, 0.6, 0.5] and progress["learning_rate"] == 5e-5
    assert progress["eval_step"] == 40
    assert progress["accept_length_estimate"] == pytest.approx(progress["simulated_acc_len"] + 1)
    assert progress["regenerated_records"] == 5
    assert progress["stages"] == {"regenerate": "done", "train": "done", "export": "done"}
    regenerated = [json.loads(line) for line in (exported.parent / "regenerated.jsonl").read_text().splitlines()]
    assert all(record["conversations"][1]["content"] != "old answer" for record in regenerated)
    config = parse_yaml(Path(output["config_path"]).read_text())
    assert config["training"]["learning_rate"] == 5e-5 and config["training"]["max_steps"] == 40
    assert config["deployment"]["disaggregated"]["server_urls"] == [f"http://127.0.0.1:{port}"]
    assert config["data"]["train_data_path"].endswith("regenerated.jsonl")
    record = context.state.processes[-1]
    assert record.kind == "drafter_training" and record.config["progress"]["state"] == "done"
    assert f"exported to {exported}" in context.state.findings[-1].summary


def test_background_run_reports_progress_and_can_be_stopped(tmp_path: Path, setup: dict[str, str]) -> None:
    context = make(tmp_path, setup)
    train_data = tmp_path / "data.jsonl"
    train_data.write_text('{"conversations": []}\n')
    started = call(
        context,
        "train_drafter",
        pipeline_args(
            setup,
            stages=["train", "export"],
            train_data_path=str(train_data),
            max_steps=100000,
            log_interval=5,
            env={"FAKE_SPECFORGE_STEP_SECONDS": "0.002"},
        ),
    )
    assert started.ok, started.error
    assert started.output is not None and started.output["state"] in ("starting", "running")
    assert started.output["exported_path"] is None

    def status() -> dict[str, object]:
        result = call(context, "drafter_status", {"name": "d1"})
        assert result.ok and result.output is not None, result.error
        return result.output

    assert wait_for(lambda: (status()["progress"]["step"] or 0) >= 20, timeout=20)  # type: ignore[index]
    # The runner reports the stage's CPU time every second: work that prints nothing still shows as progress.
    assert wait_for(lambda: (status()["progress"]["stage_cpu_seconds"] or 0) > 0, timeout=15)  # type: ignore[index]
    assert status()["progress"]["log_bytes"] > 0  # type: ignore[index]
    again = call(context, "train_drafter", pipeline_args(setup, stages=["train"], train_data_path=str(train_data)))
    assert not again.ok and "still running" in (again.error or "")
    stopped = stop_process(context.state.processes[-1], context.host, grace_seconds=5)
    assert stopped.stopped
    final = status()
    assert final["state"] == "stopped" and final["exported_path"] is None
    assert "stopped" in context.state.findings[-1].summary


def test_a_failing_stage_fails_the_run_with_evidence(tmp_path: Path, setup: dict[str, str]) -> None:
    context = make(tmp_path, setup)
    train_data = tmp_path / "data.jsonl"
    train_data.write_text('{"conversations": []}\n')
    result = call(
        context,
        "train_drafter",
        pipeline_args(
            setup,
            stages=["train", "export"],
            train_data_path=str(train_data),
            wait=True,
            env={"FAKE_SPECFORGE_FAIL": "train"},
        ),
    )
    assert result.ok and result.output is not None
    assert result.output["state"] == "failed" and result.output["progress"]["stage"] == "train"
    assert "exited with 1" in result.output["progress"]["error"]
    finding = context.state.findings[-1]
    assert "failed in stage train" in finding.summary
    assert any("OutOfMemoryError" in line for line in finding.evidence)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"draft_model_config": None}, "draft_model_config"),
        ({"specforge_dir": None}, "specforge_dir"),
        ({"stages": ["export", "train"]}, "ordered"),
        ({"stages": ["train"], "input_data_path": None}, "train_data_path"),
        ({"name": "../evil"}, "name"),
    ],
)
def test_bad_arguments_are_refused(
    tmp_path: Path, setup: dict[str, str], extra: dict[str, object], message: str
) -> None:
    result = call(make(tmp_path, setup), "train_drafter", {**pipeline_args(setup), **extra})
    assert not result.ok and message in (result.error or "")


def test_regeneration_needs_a_running_target(tmp_path: Path, setup: dict[str, str]) -> None:
    result = call(make(tmp_path, setup), "train_drafter", pipeline_args(setup))
    assert not result.ok and "target server" in (result.error or "")
    missing = call(make(tmp_path, setup), "drafter_status", {})
    assert not missing.ok and "no managed process" in (missing.error or "")


@contextlib.contextmanager
def listening() -> Iterator[str]:
    """A loopback TCP listener standing in for a Mooncake service (only reachability is checked)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield f"127.0.0.1:{server.getsockname()[1]}"


def test_missing_prerequisites_are_named_with_the_offline_route(tmp_path: Path, setup: dict[str, str]) -> None:
    train_data = tmp_path / "data.jsonl"
    train_data.write_text('{"conversations": []}\n')
    arguments = pipeline_args(
        setup,
        stages=["train"],
        train_data_path=str(train_data),
        extra_config={},
        specforge_python=None,
        deployment_mode="local_colocated",
    )
    result = call(make(tmp_path, setup), "train_drafter", arguments)
    assert not result.ok
    error = result.error or ""
    for name in ("specforge_environment", "deployment_mode", "mooncake", "capture_server"):
        assert f"{name}:" in error
    assert "Offline route" in error and "prepare_hidden_states.py" in error
    assert not any(record.kind == "drafter_training" for record in make(tmp_path, setup).state.processes)


def test_offline_route_needs_no_services(tmp_path: Path, setup: dict[str, str]) -> None:
    features = tmp_path / "hidden-states"
    features.mkdir()
    context = make(tmp_path, setup)
    result = call(
        context,
        "train_drafter",
        pipeline_args(setup, stages=["train"], extra_config={}, hidden_states_path=str(features), wait=True),
    )
    assert result.ok, result.error
    config = parse_yaml(Path(result.output["config_path"]).read_text())  # type: ignore[index]
    assert config["data"]["hidden_states_path"] == str(features) and "train_data_path" not in config["data"]
    assert config["deployment"]["mode"] == "local_colocated"


def test_progress_lines_in_specforge_format() -> None:
    progress = DrafterProgress()
    for line in [
        "Training plan: strategy=eagle3, records=10, batch_size=1, total_steps=300, ttt_length=7",
        "step 50: {'acc_0': 0.5, 'acc_1': 0.4, 'acc_10': 0.01, 'acc': 0.3, 'loss': 2.5, 'lr': 0.0001, "
        "'perf/data_wait_time_s': nan, 'acceptance_rate': 0.35}",
        "step 100: {'eval/avg_loss': 2.1, 'eval/per_position_acc': [0.6, 0.5], 'eval/simulated_acc_len': 0.9}",
        "step 150: {'acc_0': 0.55, 'loss': inf}",
        "step 200: not a dict",
    ]:
        apply_line(progress, line)
    assert (progress.step, progress.total_steps, progress.loss, progress.accuracy) == (150, 300, None, 0.3)
    assert progress.per_position_accuracy == [0.55]
    assert (progress.eval_step, progress.simulated_acc_len, progress.accept_length_estimate) == (100, 0.9, 1.9)
    assert progress.learning_rate == 0.0001 and progress.acceptance_rate == 0.35


def test_run_config_yaml_reads_back_with_types() -> None:
    document = {
        "model": {"target_model_path": "/models/kimi k2", "trust_remote_code": True},
        "training": {"learning_rate": 5e-05, "max_grad_norm": 0.5, "num_epochs": 10, "resume_from": None},
        "deployment": {"disaggregated": {"server_urls": ["http://127.0.0.1:30000", "http://h2:30000"]}},
        "run_id": "run-1",
    }
    text = to_yaml(document)
    assert "learning_rate: 5.0e-05" in text  # PyYAML (YAML 1.1) needs the dot to read a float
    assert parse_yaml(text) == document


def test_the_simulated_host_runs_the_same_pipeline_with_its_specforge_stand_in(tmp_path: Path) -> None:
    from tools.hosts.sim.host import SimHost
    from twin.datasets import generic_records, write_jsonl

    host = SimHost.from_scenario("h100-healthy", tmp_path / "state")
    context = make_context(tmp_path, host=host)
    data = tmp_path / "sharegpt.jsonl"
    write_jsonl(data, generic_records(8))
    result = call(
        context,
        "train_drafter",
        {
            "name": "sim-drafter",
            "target_model_path": host.scenario.model.name,
            "stages": ["train", "export"],
            "specforge_python": str(host.layout.specforge_bin(host.scenario) / "python"),
            "extra_config": MANAGED_LOCAL,
            "train_data_path": str(data),
            "draft_model_config": str(host.layout.draft_config(host.scenario)),
            "max_steps": 30,
            "log_interval": 10,
            "wait": True,
            "poll_seconds": 0.1,
            "wait_timeout_seconds": 60,
        },
    )
    assert result.ok and result.output is not None, result.error
    assert result.output["state"] == "done", result.output["progress"]
    assert result.output["progress"]["step"] == 30 and result.output["progress"]["loss"] is not None
    plan = json.loads((Path(result.output["config_path"]).parent / "opsloop-plan.json").read_text())
    assert all(stage["host_argv"][1:3] == ["-m", "twin.specforge"] for stage in plan["stages"])
    assert (Path(result.output["exported_path"]) / "config.json").is_file()
