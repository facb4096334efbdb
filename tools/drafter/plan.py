"""The EAGLE-3 drafter pipeline as a plan: SpecForge commands and the run config they read.

Stages (SpecForge 0.2.0's ``specforge/cli.py`` and its checkout's ``scripts/``):

1. ``regenerate``: ``python scripts/regenerate_train_data.py`` answers the prompts again with the running
   target server, so the drafter learns the target's own distribution.
2. ``prepare_hidden_states`` (offline): ``torchrun scripts/prepare_hidden_states.py ...`` loads the target
   and writes its hidden states (:mod:`tools.drafter.hidden_states`); then ``split_eval`` holds a share of
   them out for evaluation (:mod:`tools.drafter.split_eval`).
3. ``train``: ``specforge train --config run.yaml``: offline from ``data.hidden_states_path`` with
   ``deployment.mode: local_colocated`` (and ``data.eval_hidden_states_path`` + ``training.eval_interval``
   when samples are held out), or online from ``data.train_data_path`` with ``disaggregated`` capture
   servers and Mooncake; ``extra_config`` can reshape any section.
4. ``export``: ``specforge export --to sglang --checkpoint <out>/<run>-latest --draft-config ...`` turns the
   runtime checkpoint into a directory for ``--speculative-draft-model-path`` (``LlamaForCausalLMEagle3``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from tools.drafter import split_eval
from tools.drafter.arguments import Stage, TrainDrafterArgs
from tools.drafter.hidden_states import PrepareCommand
from tools.drafter.yaml_text import yaml_scalar
from tools.mappings import merge

PlanStage = Stage | Literal["split_eval"]
MOONCAKE = {
    "mooncake_metadata_server": "http://127.0.0.1:35880/metadata",
    "mooncake_master_server_addr": "127.0.0.1:35551",
}


class PlannedStage(BaseModel):
    name: PlanStage
    argv: list[str]
    host_argv: list[str]
    cwd: str | None = None


class DrafterPlan(BaseModel):
    run_id: str
    output_dir: str
    config_path: str
    status_path: str
    train_data_path: str | None
    features_dir: str | None = Field(default=None, description="Hidden states trained on (offline route)")
    eval_features_dir: str | None = Field(default=None, description="Hidden states held out for evaluation")
    checkpoint_path: str
    export_dir: str | None
    env: dict[str, str]
    stages: list[PlannedStage]
    choices: list[str] = Field(default_factory=list, description="How the preparation command was chosen")


@dataclass(frozen=True)
class RunPaths:
    run_id: str
    output_dir: Path
    train_data: str
    features: str | None  # offline: the hidden states to train on
    eval_features: str | None  # offline: the held-out ones (None: no evaluation)

    @property
    def regenerated(self) -> Path:
        return self.output_dir / "regenerated.jsonl"

    @property
    def checkpoint(self) -> Path:
        return self.output_dir / f"{self.run_id}-latest"

    @property
    def export_dir(self) -> Path:
        return self.output_dir / "export-sglang"

    @property
    def config(self) -> Path:
        return self.output_dir / "run.yaml"


def _data_section(args: TrainDrafterArgs, paths: RunPaths) -> dict[str, Any]:
    source = {"hidden_states_path": paths.features} if paths.features else {"train_data_path": paths.train_data}
    data: dict[str, Any] = {**source, "max_length": args.max_length}
    if paths.eval_features:
        data["eval_hidden_states_path"] = paths.eval_features
    if args.chat_template:
        data["chat_template"] = args.chat_template
    return data


def _deployment(args: TrainDrafterArgs, paths: RunPaths, capture_urls: list[str]) -> dict[str, Any]:
    mode = "local_colocated" if paths.features else args.deployment_mode
    deployment: dict[str, Any] = {"mode": mode, "trainer": {"nnodes": 1, "nproc_per_node": args.nproc_per_node}}
    extra = args.extra_config.get("deployment") or {}
    managed = isinstance(extra, dict) and (extra.get("disaggregated") or {}).get("managed_local")
    if mode == "disaggregated":
        section: dict[str, Any] = {
            "control_dir": str(paths.output_dir / "control"),
            "consumer_state_dir": str(paths.output_dir / "consumer-state"),
            "backend": "mooncake",
        }
        if not managed:  # managed_local derives the capture URLs and Mooncake endpoints itself
            section.update({"server_urls": capture_urls, **MOONCAKE, "mooncake_protocol": "tcp"})
        deployment["disaggregated"] = section
    return deployment


def run_config(args: TrainDrafterArgs, paths: RunPaths, capture_urls: list[str]) -> dict[str, Any]:
    """The ``specforge train`` run config (the sections of SpecForge's ``specforge/config/schema.py``)."""
    model: dict[str, Any] = {
        "target_model_path": args.target_model_path,
        "target_backend": "sglang",
        "torch_dtype": "bfloat16",
    }
    if args.draft_model_config:
        model["draft_model_config"] = args.draft_model_config
    if args.vocab_mapping_path:
        model["vocab_mapping_path"] = args.vocab_mapping_path
    if args.trust_remote_code:
        model["trust_remote_code"] = True
    training: dict[str, Any] = {
        "strategy": "eagle3",
        "num_epochs": args.num_epochs,
        "batch_size": args.batch_size,
        "learning_rate": args.learning_rate,
        "ttt_length": args.ttt_length,
        "tp_size": args.tp_size,
        "log_interval": args.log_interval,
        "save_interval": args.save_interval,
    }
    if args.max_steps:
        training["max_steps"] = args.max_steps
    if paths.eval_features:
        training["eval_interval"] = args.eval_interval or args.log_interval
    config = {
        "model": model,
        "data": _data_section(args, paths),
        "training": training,
        "run_id": paths.run_id,
        "output_dir": str(paths.output_dir),
        "deployment": _deployment(args, paths, capture_urls),
    }
    return merge(config, args.extra_config)


def _regenerate(args: TrainDrafterArgs, python: str, paths: RunPaths, target_server: str) -> list[str]:
    script = str(Path(str(args.specforge_dir)) / "scripts" / "regenerate_train_data.py")
    command = [python, script, "--model", args.served_model_name or args.target_model_path]
    command += ["--server-address", target_server, "--input-file-path", str(args.input_data_path)]
    command += ["--output-file-path", str(paths.regenerated), "--concurrency", str(args.regenerate_concurrency)]
    command += ["--max-tokens", str(args.regenerate_max_tokens)]
    command += ["--temperature", yaml_scalar(args.regenerate_temperature)]
    if args.num_samples:
        command += ["--num-samples", str(args.num_samples)]
    return command


def stage_commands(
    args: TrainDrafterArgs, python: str, paths: RunPaths, target_server: str | None, prepare: PrepareCommand | None
) -> dict[PlanStage, tuple[list[str], str | None]]:
    """The real command line (and working directory) of each stage that can run."""
    specforge = str(Path(python).parent / "specforge")
    commands: dict[PlanStage, tuple[list[str], str | None]] = {}
    if args.specforge_dir and args.input_data_path and target_server:
        commands["regenerate"] = (_regenerate(args, python, paths, target_server), args.specforge_dir)
    if prepare is not None:
        commands["prepare_hidden_states"] = (prepare.argv, args.specforge_dir)
    if paths.features and paths.eval_features:
        splitter = [sys.executable, str(Path(split_eval.__file__).resolve()), paths.features, paths.eval_features]
        commands["split_eval"] = ([*splitter, str(args.eval_fraction)], str(paths.output_dir))
    commands["train"] = ([specforge, "train", "--config", str(paths.config)], str(paths.output_dir))
    if args.draft_model_config:
        export = [specforge, "export", "--to", "sglang", "--checkpoint", str(paths.checkpoint)]
        export += ["--draft-config", args.draft_model_config, "--output-dir", str(paths.export_dir)]
        if args.vocab_mapping_path:
            export += ["--vocab-mapping", args.vocab_mapping_path]
        commands["export"] = (export, str(paths.output_dir))
    return commands
