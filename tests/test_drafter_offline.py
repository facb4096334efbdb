"""SpecForge's offline route through train_drafter on the simulated host: the preparation script's flags read
from the checkout's own --help (three revisions), GPU room judged against the serving engine, hidden states
prepared by the target, a held-out split that SpecForge evaluates on, training and export; and the
prerequisite check telling a host without SpecForge from one whose SpecForge is broken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.sim import free_port, specforge_training, write_scenario
from support.tool_context import make_context

from tools.base import ToolContext, ToolResult
from tools.catalog import default_registry
from tools.hosts.sim.host import SimHost
from twin.specforge.config import parse_yaml

REGISTRY = default_registry()


def simulated(tmp_path: Path, training_extra: str) -> tuple[SimHost, ToolContext]:
    scenario = write_scenario(tmp_path, training_extra=training_extra, specforge_in_engine="")
    host = SimHost.from_scenario(str(scenario), tmp_path / "state")
    context = make_context(tmp_path, host=host)
    assert REGISTRY.execute("probe_system", {}, context).ok
    return host, context


def call(context: ToolContext, tool: str, arguments: dict[str, object]) -> ToolResult:
    return REGISTRY.execute(tool, arguments, context)


def offline_arguments(context: ToolContext, **extra: object) -> dict[str, object]:
    environment = context.state.environment
    [target] = [model for model in environment.models if model.role == "target"]
    return {
        "name": "d1",
        "target_model_path": target.path,
        "served_model_name": target.name,
        "specforge_dir": environment.specforge_dir,
        "draft_model_config": environment.specforge_draft_configs[0],
        "input_data_path": environment.specforge_datasets[0],
        "stages": ["regenerate", "prepare_hidden_states", "train", "export"],
        "target_tp_size": 2,
        "num_epochs": 4,
        "log_interval": 8,
        "poll_seconds": 0.1,
        "wait_timeout_seconds": 120,
        **extra,
    }


def check(output: dict[str, object], name: str) -> dict[str, object]:
    report = output["prerequisites"]
    assert isinstance(report, dict)
    return next(item for item in report["checks"] if item["name"] == name)


def test_offline_route_frees_the_gpus_prepares_trains_evaluates_and_exports(tmp_path: Path) -> None:
    host, context = simulated(tmp_path, specforge_training())
    port = free_port()
    [target] = [model for model in context.state.environment.models if model.role == "target"]
    engine = call(
        context,
        "launch_engine",
        {
            "config": {
                "engine": "sglang",
                "model_path": target.path,
                "served_model_name": target.name,
                "tp_size": 2,
                "port": port,
            },
            "name": "engine-1",
            "poll_seconds": 0.1,
        },
    )
    assert engine.ok and engine.output is not None and engine.output["readiness"]["outcome"] == "ready", engine.error

    planned = call(context, "train_drafter", offline_arguments(context, dry_run=True))
    assert planned.ok and planned.output is not None, planned.error
    assert planned.output["state"] == "planned" and planned.output["pid"] is None
    assert check(planned.output, "specforge_environment")["ok"] and check(planned.output, "prepare_script")["ok"]
    room = check(planned.output, "gpu_memory")
    assert not room["ok"] and "engine-1" in room["detail"] and "--sglang-mem-fraction-static 0.40" in room["detail"]
    plan = planned.output["plan"]
    assert [stage["name"] for stage in plan["stages"]] == [
        "regenerate",
        "prepare_hidden_states",
        "split_eval",
        "train",
        "export",
    ]
    prepare = plan["stages"][1]["argv"]
    venv_python = str(host.layout.specforge_bin(host.scenario) / "python")
    assert prepare[:5] == [venv_python, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    assert prepare[prepare.index("--strategy") + 1] == "eagle3" and "--draft-model-config" in prepare
    assert not (context.state_dir / "drafters" / "d1").exists()  # a dry run writes nothing

    data = call(context, "train_drafter", offline_arguments(context, name="d1-data", stages=["regenerate"], wait=True))
    assert data.ok and data.output is not None and data.output["state"] == "done", data.error
    regenerated = data.output["train_data_path"]
    assert data.output["progress"]["regenerated_records"] == 12

    arguments = offline_arguments(context, stages=["prepare_hidden_states", "train", "export"], wait=True)
    arguments["train_data_path"] = regenerated
    refused = call(context, "train_drafter", arguments)
    assert not refused.ok and "gpu_memory:" in (refused.error or "")  # the engine still holds the GPUs
    assert call(context, "stop_engine", {"name": "engine-1"}).ok

    trained = call(context, "train_drafter", arguments)
    assert trained.ok and trained.output is not None, trained.error
    output = trained.output
    assert output["state"] == "done", output["progress"]
    progress = output["progress"]
    assert progress["stages"] == {
        "prepare_hidden_states": "done",
        "split_eval": "done",
        "train": "done",
        "export": "done",
    }
    assert progress["prepared_samples"] == 12 and progress["eval_step"] == progress["step"]
    assert progress["simulated_acc_len"] is not None and progress["simulated_acc_len"] > 1.0  # regenerated data
    run = context.state_dir / "drafters" / "d1"
    held_out = sorted((run / "hidden-states-eval").rglob("*.ckpt"))
    assert len(held_out) == 1 and len(sorted((run / "hidden-states").rglob("*.ckpt"))) == 11
    config = parse_yaml((run / "run.yaml").read_text())
    assert config["data"]["hidden_states_path"] == str(run / "hidden-states")
    assert config["data"]["eval_hidden_states_path"] == str(run / "hidden-states-eval")
    assert config["training"]["eval_interval"] == 8 and config["deployment"]["mode"] == "local_colocated"
    assert json.loads((Path(output["exported_path"]) / "config.json").read_text())["architectures"] == [
        "LlamaForCausalLMEagle3"
    ]


@pytest.mark.parametrize(
    ("revision", "capture"),
    [
        ("strategy", ["--strategy", "eagle3", "--draft-model-config"]),
        ("capture-layers", ["--capture-layers", "1,23,44"]),
        ("aux-hidden-states", ["--enable-aux-hidden-states", "--aux-hidden-states-layers", "1,23,44"]),
    ],
)
def test_preparation_flags_come_from_the_installed_script(tmp_path: Path, revision: str, capture: list[str]) -> None:
    _, context = simulated(tmp_path, specforge_training(prepare_script=revision))
    arguments = offline_arguments(
        context, stages=["prepare_hidden_states", "train", "export"], wait=True, eval_fraction=0.0, max_steps=16
    )
    arguments["train_data_path"] = context.state.environment.specforge_datasets[0]
    result = call(context, "train_drafter", arguments)
    assert result.ok and result.output is not None, result.error
    assert result.output["state"] == "done", result.output["progress"]
    plan = json.loads((context.state_dir / "drafters" / "d1" / "opsloop-plan.json").read_text())
    prepare = plan["stages"][0]["argv"]
    start = prepare.index(capture[0])
    assert prepare[start : start + len(capture)] == capture
    assert any(choice.startswith(capture[0]) for choice in plan["choices"])
    cached = list((context.state_dir / "cache").glob("specforge-prepare-help-*.json"))
    assert len(cached) == 1 and capture[0] in json.loads(cached[0].read_text())["flags"]


def test_features_without_the_auxiliary_states_fail_eagle3_training(tmp_path: Path) -> None:
    """The oldest revision stores EAGLE-3's auxiliary states only when asked; SpecForge's reader then refuses."""
    host, context = simulated(tmp_path, specforge_training(prepare_script="aux-hidden-states"))
    environment = context.state.environment
    python = str(host.layout.specforge_bin(host.scenario) / "python")
    features = tmp_path / "features"
    script = f"{environment.specforge_dir}/scripts/prepare_hidden_states.py"
    prepared = host.run(
        [
            python,
            script,
            "--target-model-path",
            str(host.model_dir),
            "--data-path",
            environment.specforge_datasets[0],
            "--output-path",
            str(features),
            "--tp-size",
            "2",
            "--sglang-mem-fraction-static",
            "0.4",
        ],
        timeout=60,
    )
    assert prepared.exit_code == 1 and "world size 1 is not divisible by tp size 2" in prepared.stderr
    prepared = host.run([python, "-m", "torch.distributed.run", "--nproc_per_node=2", *prepared.argv[1:]], timeout=60)
    assert prepared.exit_code == 0, prepared.stderr
    run = tmp_path / "run.yaml"
    run.write_text(
        f"run_id: r\noutput_dir: {tmp_path / 'out'}\nmodel:\n  target_model_path: {host.model_dir}\n"
        f"data:\n  hidden_states_path: {features}\n"
    )
    trained = host.run([str(Path(python).parent / "specforge"), "train", "-c", str(run)], timeout=60)
    assert trained.exit_code == 1 and "missing required offline feature keys ['aux_hidden_state']" in trained.stderr


@pytest.mark.parametrize(
    ("training_extra", "absent", "named"),
    [
        ("", True, "no SpecForge environment on this host"),
        (
            specforge_training(packages={"specforge": "0.2.0", "torch": "2.9.1", "sglang": "0.5.14"}),
            False,
            "torch==2.11.0",
        ),
        (specforge_training(error="ImportError: libcudart.so.13: cannot open shared object file"), False, "libcudart"),
    ],
)
def test_prerequisites_tell_a_host_without_specforge_from_a_broken_one(
    tmp_path: Path, training_extra: str, absent: bool, named: str
) -> None:
    _, context = simulated(tmp_path, training_extra)
    arguments = offline_arguments(context, stages=["prepare_hidden_states", "train", "export"], dry_run=True)
    arguments["train_data_path"] = context.state.environment.specforge_datasets[0]
    result = call(context, "train_drafter", arguments)
    assert result.ok and result.output is not None, result.error
    report = result.output["prerequisites"]
    missing = [item for item in report["checks"] if not item["ok"]]
    assert missing and all(item["absent"] is absent for item in missing)
    assert any(named in item["detail"] for item in missing) and result.output["plan"] is None
