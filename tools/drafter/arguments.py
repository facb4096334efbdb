"""The arguments of ``train_drafter``: which stages of the SpecForge pipeline to run, and with what.

Two routes (SpecForge 0.2.0):

- online: ``regenerate`` (optional) then ``train`` from ``train_data_path`` against capture servers and
  Mooncake (``deployment.mode: disaggregated``), then ``export``;
- offline: ``prepare_hidden_states`` (the checkout's ``scripts/prepare_hidden_states.py`` loads the target on
  the GPUs and writes its hidden states), then ``train`` from ``hidden_states_path`` (``local_colocated``),
  then ``export``. ``regenerate`` needs the serving target and ``prepare_hidden_states`` needs its GPUs, so
  they usually run as two calls with the engine stopped in between (``dry_run`` says whether the GPUs have
  room).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from tools.base import ToolArgs

Stage = Literal["regenerate", "prepare_hidden_states", "train", "export"]
STAGE_ORDER: list[Stage] = ["regenerate", "prepare_hidden_states", "train", "export"]
DEFAULT_STAGES: list[Stage] = ["regenerate", "train", "export"]


class TrainDrafterArgs(ToolArgs):
    name: str = Field(default="drafter", pattern=r"^[A-Za-z0-9_.-]{1,64}$", description="Run and process name")
    target_model_path: str = Field(description="Target model (HF id or local dir) the drafter is trained for")
    draft_model_config: str | None = Field(default=None, description="Draft config JSON (needed for export)")
    stages: list[Stage] = Field(default_factory=lambda: list(DEFAULT_STAGES))
    specforge_dir: str | None = Field(default=None, description="SpecForge source checkout (for scripts/)")
    specforge_python: str | None = Field(
        default=None,
        description="Python of the SpecForge environment; default: the specforge_python setting, else the one "
        "probe_system found ($SPECFORGE_DIR/.venv), else the engine environment's",
    )
    input_data_path: str | None = Field(default=None, description="Conversations JSONL to regenerate")
    train_data_path: str | None = Field(
        default=None, description="Conversations to train on (online) or to prepare hidden states from"
    )
    hidden_states_path: str | None = Field(
        default=None,
        description="Offline route: where prepare_hidden_states writes the target's hidden states (default: "
        "<output_dir>/hidden-states), or existing ones to train on",
    )
    target_server: str | None = Field(
        default=None,
        description="host:port of the running target as the training host sees it (launch_engine's "
        "host_base_url); default: the live engine",
    )
    served_model_name: str | None = Field(default=None, description="Model name the server answers to")
    regenerate_concurrency: int = Field(default=64, ge=1)
    regenerate_max_tokens: int = Field(default=4096, ge=1)
    regenerate_temperature: float = Field(default=0.7, ge=0)
    num_samples: int | None = Field(default=None, ge=1)
    target_tp_size: int = Field(default=1, ge=1, description="Tensor parallelism of the target while preparing")
    prepare_mem_fraction_static: float | None = Field(
        default=None, gt=0, le=0.95, description="SGLang memory fraction while preparing; default: from the weights"
    )
    prepare_attention_backend: str | None = Field(
        default=None, description="SGLang attention backend while preparing; default: the script's"
    )
    prepare_batch_size: int | None = Field(default=None, ge=1, description="Default: the script's")
    trust_remote_code: bool = False
    eval_fraction: float = Field(
        default=0.05, ge=0, le=0.5, description="Share of prepared samples held out for SpecForge's evaluation"
    )
    eval_interval: int | None = Field(default=None, ge=1, description="Steps between evaluations (log_interval)")
    output_dir: str | None = Field(default=None, description="Default: <state dir>/drafters/<name>")
    chat_template: str | None = Field(default=None, description="e.g. deepseek-v3, kimi-k2-instruct, llama3")
    vocab_mapping_path: str | None = None
    num_epochs: int = Field(default=10, ge=1)
    max_steps: int | None = Field(default=None, ge=1)
    learning_rate: float = Field(default=1e-4, gt=0)
    max_length: int = Field(default=2048, ge=16)
    batch_size: int = Field(default=1, ge=1)
    ttt_length: int = Field(default=7, ge=1)
    tp_size: int = Field(default=1, ge=1, description="Trainer tensor parallelism (0.2.0 requires 1)")
    nproc_per_node: int = Field(default=1, ge=1)
    log_interval: int = Field(default=50, ge=1)
    save_interval: int = Field(default=1000, ge=1)
    deployment_mode: Literal["disaggregated", "local_colocated"] = "disaggregated"
    capture_server_urls: list[str] = Field(default_factory=list, description="Default: the target server")
    extra_config: dict[str, Any] = Field(default_factory=dict, description="Deep-merged into run.yaml")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment, e.g. CUDA_VISIBLE_DEVICES")
    dry_run: bool = Field(
        default=False, description="Check the prerequisites and return the plan (commands, choices); start nothing"
    )
    wait: bool = Field(default=False, description="Block until the pipeline ends (else use drafter_status)")
    wait_timeout_seconds: float = Field(default=3600.0, gt=0, le=48 * 3600)
    poll_seconds: float = Field(default=10.0, gt=0, le=600)

    @property
    def offline(self) -> bool:
        return "prepare_hidden_states" in self.stages or bool(self.hidden_states_path)

    @model_validator(mode="after")
    def _stages_make_sense(self) -> TrainDrafterArgs:
        if not self.stages or self.stages != [stage for stage in STAGE_ORDER if stage in self.stages]:
            raise ValueError(f"stages must be a non-empty, ordered subset of {STAGE_ORDER}")
        if "regenerate" in self.stages and not (self.specforge_dir and self.input_data_path):
            raise ValueError("the regenerate stage needs specforge_dir and input_data_path")
        data = "regenerate" in self.stages or bool(self.train_data_path)
        if "prepare_hidden_states" in self.stages:
            if not self.specforge_dir:
                raise ValueError("the prepare_hidden_states stage needs specforge_dir (its scripts/ folder)")
            if not data:
                raise ValueError("the prepare_hidden_states stage needs train_data_path (or the regenerate stage)")
        elif "train" in self.stages and not data and not self.hidden_states_path:
            raise ValueError(
                "the train stage needs train_data_path or hidden_states_path (or the regenerate stage before it)"
            )
        if "export" in self.stages and not self.draft_model_config:
            raise ValueError("the export stage needs draft_model_config (specforge export --draft-config)")
        return self
