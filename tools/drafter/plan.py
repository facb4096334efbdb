"""The EAGLE-3 drafter pipeline as a plan: SpecForge commands and the run config they read.

Stages (SpecForge's ``specforge/cli.py`` and its checkout's ``scripts/``):

1. ``regenerate``: ``python scripts/regenerate_train_data.py`` from a SpecForge checkout (the wheel
   leaves ``scripts/`` out) answers the prompts again with the running target server, so the drafter
   learns the target's own distribution.
2. ``train``: ``specforge train --config run.yaml`` (unified runtime). Online training reads
   ``data.train_data_path`` and needs ``deployment.mode: disaggregated`` with capture server URLs (a
   target server carrying SpecForge's capture patch); ``extra_config`` can reshape any section.
3. ``export``: ``specforge export --to sglang --checkpoint <out>/<run>-latest --draft-config ...`` turns the
   runtime checkpoint into a directory for ``--speculative-draft-model-path`` (``LlamaForCausalLMEagle3``
   drafts only).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from tools.base import ToolArgs
from tools.mappings import merge

Stage = Literal["regenerate", "train", "export"]
STAGE_ORDER: list[Stage] = ["regenerate", "train", "export"]


class TrainDrafterArgs(ToolArgs):
    name: str = Field(default="drafter", pattern=r"^[A-Za-z0-9_.-]{1,64}$", description="Run and process name")
    target_model_path: str = Field(description="Target model (HF id or local dir) the drafter is trained for")
    draft_model_config: str | None = Field(default=None, description="Draft config JSON (needed for export)")
    stages: list[Stage] = Field(default_factory=lambda: list(STAGE_ORDER))
    specforge_dir: str | None = Field(default=None, description="SpecForge source checkout (for scripts/)")
    specforge_python: str | None = Field(
        default=None, description="Python of the SpecForge environment; default: the engine environment's"
    )
    input_data_path: str | None = Field(default=None, description="Conversations JSONL to regenerate")
    train_data_path: str | None = Field(default=None, description="Training data when not regenerating")
    hidden_states_path: str | None = Field(
        default=None,
        description="Offline route: hidden states generated "
        "from the target (scripts/prepare_hidden_states.py); no capture "
        "server or Mooncake needed",
    )
    target_server: str | None = Field(
        default=None, description="host:port of the running target; default: the live engine"
    )
    served_model_name: str | None = Field(default=None, description="Model name the server answers to")
    regenerate_concurrency: int = Field(default=64, ge=1)
    regenerate_max_tokens: int = Field(default=4096, ge=1)
    regenerate_temperature: float = Field(default=0.7, ge=0)
    num_samples: int | None = Field(default=None, ge=1)
    output_dir: str | None = Field(default=None, description="Default: <state dir>/drafters/<name>")
    chat_template: str | None = Field(default=None, description="e.g. deepseek-v3, kimi-k2-instruct, llama3")
    vocab_mapping_path: str | None = None
    num_epochs: int = Field(default=10, ge=1)
    max_steps: int | None = Field(default=None, ge=1)
    learning_rate: float = Field(default=1e-4, gt=0)
    max_length: int = Field(default=2048, ge=16)
    batch_size: int = Field(default=1, ge=1)
    ttt_length: int = Field(default=7, ge=1)
    tp_size: int = Field(default=1, ge=1)
    nproc_per_node: int = Field(default=1, ge=1)
    log_interval: int = Field(default=50, ge=1)
    save_interval: int = Field(default=1000, ge=1)
    deployment_mode: Literal["disaggregated", "local_colocated"] = "disaggregated"
    capture_server_urls: list[str] = Field(default_factory=list, description="Default: the target server")
    extra_config: dict[str, Any] = Field(default_factory=dict, description="Deep-merged into run.yaml")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment, e.g. CUDA_VISIBLE_DEVICES")
    wait: bool = Field(default=False, description="Block until the pipeline ends (else use drafter_status)")
    wait_timeout_seconds: float = Field(default=3600.0, gt=0, le=48 * 3600)
    poll_seconds: float = Field(default=10.0, gt=0, le=600)

    @model_validator(mode="after")
    def _stages_make_sense(self) -> TrainDrafterArgs:
        if not self.stages or self.stages != [stage for stage in STAGE_ORDER if stage in self.stages]:
            raise ValueError(f"stages must be a non-empty, ordered subset of {STAGE_ORDER}")
        if "regenerate" in self.stages and not (self.specforge_dir and self.input_data_path):
            raise ValueError("the regenerate stage needs specforge_dir and input_data_path")
        if (
            "train" in self.stages
            and "regenerate" not in self.stages
            and not self.train_data_path
            and not self.hidden_states_path
        ):
            raise ValueError(
                "the train stage needs train_data_path or hidden_states_path (or the regenerate stage before it)"
            )
        if "export" in self.stages and not self.draft_model_config:
            raise ValueError("the export stage needs draft_model_config (specforge export --draft-config)")
        return self


class PlannedStage(BaseModel):
    name: Stage
    argv: list[str]
    host_argv: list[str]
    cwd: str | None = None


class DrafterPlan(BaseModel):
    run_id: str
    output_dir: str
    config_path: str
    status_path: str
    train_data_path: str | None
    checkpoint_path: str
    export_dir: str | None
    env: dict[str, str]
    stages: list[PlannedStage]


def yaml_scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        text = repr(value)
        mantissa, _, exponent = text.partition("e")
        # YAML 1.1 (PyYAML) reads '5e-05' as a string; '5.0e-05' is a float.
        return f"{mantissa if '.' in mantissa else mantissa + '.0'}{'e' + exponent if exponent else ''}"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value))


def to_yaml(document: dict[str, Any], indent: int = 0) -> str:
    """Block YAML for nested mappings, lists of scalars and scalars (strings double-quoted)."""
    lines = []
    pad = " " * indent
    for key, value in document.items():
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:")
            lines.append(to_yaml(value, indent + 2).rstrip("\n"))
        elif isinstance(value, list):
            lines.append(f"{pad}{key}:")
            lines.extend(f"{pad}  - {yaml_scalar(item)}" for item in value)
        else:
            lines.append(f"{pad}{key}: {yaml_scalar(value)}")
    return "\n".join(line for line in lines if line) + "\n"


def run_config(
    args: TrainDrafterArgs, *, run_id: str, output_dir: Path, train_data: str, capture_urls: list[str]
) -> dict[str, Any]:
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
    source = (
        {"hidden_states_path": args.hidden_states_path} if args.hidden_states_path else {"train_data_path": train_data}
    )
    data: dict[str, Any] = {**source, "max_length": args.max_length}
    if args.chat_template:
        data["chat_template"] = args.chat_template
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
    mode = "local_colocated" if args.hidden_states_path else args.deployment_mode
    deployment: dict[str, Any] = {"mode": mode, "trainer": {"nnodes": 1, "nproc_per_node": args.nproc_per_node}}
    extra_deployment = args.extra_config.get("deployment") or {}
    managed = isinstance(extra_deployment, dict) and (extra_deployment.get("disaggregated") or {}).get("managed_local")
    if mode == "disaggregated":
        deployment["disaggregated"] = {
            "control_dir": str(output_dir / "control"),
            "consumer_state_dir": str(output_dir / "consumer-state"),
            "backend": "mooncake",
        }
        if not managed:  # managed_local derives the capture URLs and Mooncake endpoints itself
            deployment["disaggregated"].update(
                {
                    "server_urls": capture_urls,
                    "mooncake_metadata_server": "http://127.0.0.1:35880/metadata",
                    "mooncake_master_server_addr": "127.0.0.1:35551",
                    "mooncake_protocol": "tcp",
                }
            )
    config = {
        "model": model,
        "data": data,
        "training": training,
        "run_id": run_id,
        "output_dir": str(output_dir),
        "deployment": deployment,
    }
    return merge(config, args.extra_config)


def stage_commands(
    args: TrainDrafterArgs,
    *,
    python: str,
    output_dir: Path,
    config_path: Path,
    regenerated: Path,
    target_server: str | None,
    checkpoint: Path,
    export_dir: Path,
) -> dict[Stage, tuple[list[str], str | None]]:
    """The real command line (and working directory) of each stage."""
    specforge = str(Path(python).parent / "specforge")
    commands: dict[Stage, tuple[list[str], str | None]] = {}
    if args.specforge_dir and args.input_data_path and target_server:
        script = str(Path(args.specforge_dir) / "scripts" / "regenerate_train_data.py")
        regenerate = [
            python,
            script,
            "--model",
            args.served_model_name or args.target_model_path,
            "--server-address",
            target_server,
            "--input-file-path",
            args.input_data_path,
            "--output-file-path",
            str(regenerated),
            "--concurrency",
            str(args.regenerate_concurrency),
            "--max-tokens",
            str(args.regenerate_max_tokens),
            "--temperature",
            yaml_scalar(args.regenerate_temperature),
        ]
        if args.num_samples:
            regenerate += ["--num-samples", str(args.num_samples)]
        commands["regenerate"] = (regenerate, args.specforge_dir)
    commands["train"] = ([specforge, "train", "--config", str(config_path)], str(output_dir))
    if args.draft_model_config:
        export = [
            specforge,
            "export",
            "--to",
            "sglang",
            "--checkpoint",
            str(checkpoint),
            "--draft-config",
            args.draft_model_config,
            "--output-dir",
            str(export_dir),
        ]
        if args.vocab_mapping_path:
            export += ["--vocab-mapping", args.vocab_mapping_path]
        commands["export"] = (export, str(output_dir))
    return commands
