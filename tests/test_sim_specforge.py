"""The SpecForge stand-ins: run config, data regeneration against the live target, training, export, and
the acceptance the engine then reports for the trained drafter."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from support.sim import http_get, http_post, wait_healthy, write_scenario

from tools.hosts.sim.host import SimHost
from twin.specforge.config import ConfigError, apply_override, check_schema, parse_yaml

RUN_YAML = """\
# EAGLE-3 for the test target
run_id: drafter
output_dir: {output}
model:
  target_model_path: {target}
  draft_model_config: {draft_config}
data:
  train_data_path: {data}
  chat_template: llama3
training:
  strategy: eagle3
  max_steps: 180
  log_interval: 60
  save_interval: 90
  learning_rate: 1e-4
deployment:
  mode: disaggregated
  disaggregated:
    backend: mooncake
    managed_local:
      trainer_cuda_visible_devices: [0, 1]
  trainer:
    nproc_per_node: 2
"""


def test_run_config_subset_of_yaml_and_schema_errors() -> None:
    config = parse_yaml(
        "run_id: r  # trailing comment\noutput_dir: '/tmp/out'\nmodel:\n  target_model_path: m\n"
        "data:\n  train_data_path: d.jsonl\ntraining:\n  max_steps: 10\n  attention_backend: sdpa\n"
        "deployment:\n  mode: disaggregated\n  server_urls: [a, b]\n  ranks:\n    - 0\n    - 1\n"
    )
    assert config["training"] == {"max_steps": 10, "attention_backend": "sdpa"}
    assert config["deployment"] == {"mode": "disaggregated", "server_urls": ["a", "b"], "ranks": [0, 1]}
    check_schema(config)
    apply_override(config, "training.max_steps=25")
    assert config["training"]["max_steps"] == 25
    with pytest.raises(ConfigError, match="unknown field 'max_step' in section 'training'"):
        check_schema({**config, "training": {"max_step": 3}})
    with pytest.raises(ConfigError, match="exactly one of train_data_path"):
        check_schema({**config, "data": {"train_data_path": "a", "hidden_states_path": "b"}})
    # SpecForge 0.2.0 rejects online training outside a disaggregated deployment (config/schema.py).
    with pytest.raises(ConfigError, match=r"online training requires deployment\.mode=disaggregated"):
        check_schema({**config, "deployment": {"mode": "local_colocated"}})
    with pytest.raises(ConfigError, match="managed_local derives"):
        check_schema(
            {
                **config,
                "deployment": {
                    "mode": "disaggregated",
                    "disaggregated": {"managed_local": {}, "server_urls": ["http://a:1"]},
                },
            }
        )


def _step_lines(text: str) -> list[dict[str, float]]:
    lines = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("step ") and "eval/" not in line]
    return [json.loads(line.replace("'", '"')) for line in lines]


def _accept_length(port: int) -> float:
    http_post(f"http://127.0.0.1:{port}/v1/completions", {"prompt": "x", "max_tokens": 120, "ignore_eos": True})
    info = json.loads(http_get(f"http://127.0.0.1:{port}/server_info")[1])
    return float(info["internal_states"][0]["avg_spec_accept_length"])


def test_regenerate_train_export_then_serve_with_the_trained_drafter(tmp_path: Path) -> None:
    host = SimHost.from_scenario(
        str(write_scenario(tmp_path, training_memory=40.0, single=300.0, peak=1500.0)), tmp_path / "state"
    )
    port = 30000  # the simulated host's port; the test reaches it where the host says
    python = "/opt/engines/sglang/bin/python"

    def launch(drafter: str) -> tuple[int, float]:
        argv = [
            python,
            "-m",
            "sglang.launch_server",
            "--model-path",
            str(host.model_dir),
            "--tp",
            "2",
            "--port",
            str(port),
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-draft-model-path",
            drafter,
            "--speculative-num-steps",
            "3",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "4",
        ]
        log = tmp_path / f"engine-{time.monotonic_ns()}.log"
        spawned = host.spawn(argv, env={}, log_path=log)
        wait_healthy(host.endpoint("127.0.0.1", port)[1], log=log)
        return spawned.pid, spawned.create_time

    def stop(identity: tuple[int, float]) -> None:
        host.signal_group(*identity, signal.SIGTERM)
        while host.status(*identity).alive:
            time.sleep(0.05)

    engine = launch("test-org/generic-eagle3")
    generic = _accept_length(host.endpoint("127.0.0.1", port)[1])
    data = tmp_path / "data"
    prepared = host.run(
        [python, "scripts/prepare_data.py", "--dataset", "sharegpt", "--output-path", str(data)], timeout=60
    )
    assert prepared.exit_code == 0, prepared.stderr
    regenerated = host.run(
        [
            python,
            "scripts/regenerate_train_data.py",
            "--model",
            "test-org/Test-30B",
            "--server-address",
            f"127.0.0.1:{port}",
            "--input-file-path",
            str(data / "sharegpt_train.jsonl"),
            "--output-file-path",
            str(data / "regen.jsonl"),
        ],
        timeout=60,
    )
    assert regenerated.exit_code == 0, regenerated.stderr
    assert "Wrote 12 regenerated records" in regenerated.stdout
    run_yaml = tmp_path / "run.yaml"
    run_yaml.write_text(
        RUN_YAML.format(
            output=tmp_path / "ckpt",
            target=host.model_dir,
            data=data / "regen.jsonl",
            draft_config=host.layout.draft_config(host.scenario),
        )
    )
    busy = host.run(["specforge", "train", "--config", str(run_yaml)], timeout=60)
    assert busy.exit_code == 1 and "torch.OutOfMemoryError: CUDA out of memory" in busy.stderr  # engine holds GPUs
    stop(engine)

    trained = host.run(["specforge", "train", "--config", str(run_yaml)], timeout=60)
    assert trained.exit_code == 0, trained.stderr
    steps = _step_lines(trained.stdout)
    assert len(steps) == 3 and steps[0]["acc_0"] < steps[-1]["acc_0"] and "acceptance_rate_6" in steps[-1]
    assert steps[-1]["loss"] < steps[0]["loss"]
    latest = tmp_path / "ckpt" / "drafter-latest"
    assert latest.resolve().name == "drafter-step180" and (latest / "training_state.pt").is_file()
    assert (tmp_path / "ckpt" / "drafter-step90" / "training_state_rank1.pt").is_file()
    exported = host.run(
        [
            "specforge",
            "export",
            "--to",
            "sglang",
            "--checkpoint",
            str(latest),
            "--draft-config",
            str(host.layout.draft_config(host.scenario)),
            "--output-dir",
            str(tmp_path / "mine"),
        ],
        timeout=60,
    )
    assert exported.exit_code == 0, exported.stderr
    config = json.loads((tmp_path / "mine" / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLMEagle3"]

    engine = launch(str(tmp_path / "mine"))
    try:
        mine = _accept_length(host.endpoint("127.0.0.1", port)[1])
    finally:
        stop(engine)
    assert generic < 1.7 and mine > 2.6  # near the scenario's 2.95 for data regenerated by the target


def test_training_on_generic_data_gives_a_weaker_drafter(tmp_path: Path) -> None:
    host = SimHost.from_scenario(str(write_scenario(tmp_path)), tmp_path / "state")
    data = tmp_path / "data"
    prepared = host.run(["python3", "prepare_data.py", "--dataset", "sharegpt", "--output-path", str(data)], timeout=60)
    assert prepared.exit_code == 0, prepared.stderr
    run_yaml = tmp_path / "run.yaml"
    run_yaml.write_text(
        RUN_YAML.format(
            output=tmp_path / "ckpt",
            target="test-org/Test-30B",
            data=data / "sharegpt_train.jsonl",
            draft_config="unused.json",
        )
    )
    trained = host.run(["specforge", "train", "-c", str(run_yaml), "training.max_steps=120"], timeout=60)
    assert trained.exit_code == 0, trained.stderr
    state = json.loads((tmp_path / "ckpt" / "drafter-latest" / "training_state.pt").read_text())
    assert state["step"] == 120 and state["data_alignment"] == 0.0, state
    assert 0.5 < state["simulated_acc_len"] < 1.0, state  # ~1.8 accept length with the bonus token
    missing = host.run(
        [
            "specforge",
            "export",
            "--to",
            "sglang",
            "--checkpoint",
            str(tmp_path / "nowhere"),
            "--draft-config",
            "x.json",
            "--output-dir",
            str(tmp_path / "out"),
        ],
        timeout=60,
    )
    assert missing.exit_code == 1 and "is not a runtime checkpoint" in missing.stderr, missing


def test_online_training_prints_no_eval_metrics_and_needs_its_services(tmp_path: Path) -> None:
    host = SimHost.from_scenario(str(write_scenario(tmp_path)), tmp_path / "state")
    data = tmp_path / "data"
    assert (
        host.run(
            ["python3", "prepare_data.py", "--dataset", "sharegpt", "--output-path", str(data)], timeout=60
        ).exit_code
        == 0
    )
    run_yaml = tmp_path / "run.yaml"
    run_yaml.write_text(
        RUN_YAML.format(
            output=tmp_path / "ckpt",
            target="test-org/Test-30B",
            data=data / "sharegpt_train.jsonl",
            draft_config="unused.json",
        )
    )
    trained = host.run(["specforge", "train", "-c", str(run_yaml), "training.max_steps=60"], timeout=60)
    assert trained.exit_code == 0, trained.stderr
    assert "step 60:" in trained.stdout and "simulated_acc_len" not in trained.stdout
    # Evaluation is offline-only, and its interval and held-out features go together (0.2.0 config/schema.py).
    lone_interval = host.run(["specforge", "train", "-c", str(run_yaml), "training.eval_interval=30"], timeout=60)
    assert lone_interval.exit_code == 2 and "must be configured together" in lone_interval.stderr
    online_eval = host.run(
        [
            "specforge",
            "train",
            "-c",
            str(run_yaml),
            "training.eval_interval=30",
            f"data.eval_hidden_states_path={data}",
        ],
        timeout=60,
    )
    assert online_eval.exit_code == 2 and "requires an offline training data source" in online_eval.stderr
    without = run_yaml.read_text().replace(
        "    managed_local:\n      trainer_cuda_visible_devices: [0, 1]\n",
        "    mooncake_master_server_addr: 127.0.0.1:1\n",
    )
    run_yaml.write_text(without)
    refused = host.run(["specforge", "train", "-c", str(run_yaml)], timeout=60)
    assert refused.exit_code == 1 and "cannot reach the Mooncake master" in refused.stderr
