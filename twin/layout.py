"""Where a simulated host keeps its things, and the files it puts on its simulated disk.

``<state_dir>/sim/<scenario>/`` holds ``fs/`` (the simulated disk: the model and drafter directories
with real ``config.json`` files, and a SpecForge checkout with its scripts, a draft config and a
prepared generic data set) and ``gpu/`` (the memory ledger).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twin.datasets import generic_records, write_jsonl
from twin.ports import PORT_MAP_VARIABLE
from twin.quality import per_position_from_length, write_quality
from twin.scenario import DrafterSpec, ModelSpec, Scenario

MARKER = "SIMULATED.txt"


@dataclass(frozen=True)
class SimLayout:
    root: Path

    @classmethod
    def for_state_dir(cls, state_dir: Path, scenario: Scenario) -> SimLayout:
        return cls(state_dir.resolve() / "sim" / scenario.name)

    @property
    def fs(self) -> Path:
        return self.root / "fs"

    @property
    def models_root(self) -> Path:
        return self.fs / "models"

    def model_dir(self, scenario: Scenario) -> Path:
        return self.models_root / scenario.model.dir_name

    def drafter_dir(self, drafter: DrafterSpec) -> Path:
        return self.models_root / drafter.dir_name

    def specforge_dir(self, scenario: Scenario) -> Path:
        return self.fs / scenario.training.checkout_dir_name

    def draft_config(self, scenario: Scenario) -> Path:
        return self.specforge_dir(scenario) / "configs" / scenario.training.draft_config_name

    def specforge_bin(self, scenario: Scenario) -> Path:
        """``bin/`` of SpecForge's own virtual environment inside the checkout (present only when the scenario
        has ``[training.environment]``)."""
        return self.specforge_dir(scenario) / ".venv" / "bin"

    def dataset(self, scenario: Scenario) -> Path:
        """Generic conversations, where ``scripts/prepare_data.py --dataset sharegpt`` puts them."""
        return self.specforge_dir(scenario) / "cache" / "dataset" / "sharegpt_train.jsonl"

    @property
    def ports_file(self) -> Path:
        """The simulated host's ports and the real loopback ports standing for them (``twin.ports``)."""
        return self.root / "ports.json"

    def host_environment(self, scenario: Scenario) -> dict[str, str]:
        """Variables set on the simulated host: where its models, its SpecForge checkout and its port map are."""
        return {
            "OPSLOOP_MODEL_DIRS": str(self.models_root),
            "SPECFORGE_DIR": str(self.specforge_dir(scenario)),
            PORT_MAP_VARIABLE: str(self.ports_file),
        }


def _write_json(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def target_config(model: ModelSpec) -> dict[str, Any]:
    config: dict[str, Any] = {
        "architectures": [model.architecture],
        "model_type": model.model_type,
        "num_hidden_layers": model.num_layers,
        "hidden_size": model.hidden_size,
        "vocab_size": model.vocab_size,
        "max_position_embeddings": model.context_length,
        "torch_dtype": model.dtype,
    }
    if model.num_experts:
        config["n_routed_experts"] = model.num_experts
    if model.attention == "mla":
        config.update({"kv_lora_rank": 512, "qk_rope_head_dim": 64})
    if model.quantization:
        config["quantization_config"] = {"quant_method": model.quantization}
    return config


def draft_config(model: ModelSpec) -> dict[str, Any]:
    """An EAGLE-3 draft config for the target (one Llama layer; SpecForge export handles this class)."""
    layers = model.num_layers
    return {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "num_hidden_layers": 1,
        "hidden_size": model.hidden_size,
        "vocab_size": model.vocab_size,
        "draft_vocab_size": 32000,
        "torch_dtype": "bfloat16",
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, layers // 2 - 1, layers - 4]},
    }


def _materialize_model(directory: Path, model: ModelSpec) -> None:
    _write_json(directory / "config.json", target_config(model))
    shards = [f"model-{index:05d}-of-{model.num_shards:06d}.safetensors" for index in range(1, model.num_shards + 1)]
    _write_json(
        directory / "model.safetensors.index.json",
        {
            "metadata": {"total_size": int(model.size_gb * 1e9)},
            "weight_map": {
                f"model.layers.{index}.weight": shards[index % len(shards)] for index in range(model.num_layers)
            },
        },
    )
    _write_json(directory / "tokenizer_config.json", {"model_max_length": model.context_length})
    (directory / MARKER).write_text(
        f"Simulated copy of {model.name}: configuration only, no weights.\n", encoding="utf-8"
    )


def _materialize_drafter(directory: Path, drafter: DrafterSpec, model: ModelSpec) -> None:
    config = draft_config(model) | {"architectures": [drafter.architecture]}
    _write_json(directory / "config.json", config)
    write_quality(
        directory,
        per_position_from_length(drafter.accept_length),
        source="scenario drafter",
        name=drafter.name,
    )
    (directory / MARKER).write_text(f"Simulated copy of {drafter.name}. {drafter.description}\n", encoding="utf-8")


_SCRIPT = '''"""Simulated SpecForge checkout: the simulated host runs its stand-in for this script."""
raise SystemExit("this is a simulated SpecForge checkout; run the command through the simulated host")
'''


_PROGRAM = """#!/bin/sh
echo "simulated SpecForge environment: run this through the simulated host" >&2
exit 1
"""


def _materialize_environment(layout: SimLayout, scenario: Scenario) -> None:
    """SpecForge's virtual environment: its interpreter and console scripts, as files the probe can find."""
    directory = layout.specforge_bin(scenario)
    if scenario.training.environment is None:
        for program in ("python", "specforge", "torchrun"):
            (directory / program).unlink(missing_ok=True)
        return
    directory.mkdir(parents=True, exist_ok=True)
    for program in ("python", "specforge", "torchrun"):
        (directory / program).write_text(_PROGRAM, encoding="utf-8")
        (directory / program).chmod(0o755)


def materialize(layout: SimLayout, scenario: Scenario) -> None:
    """Create (or refresh) the simulated disk; drafters trained during a run are left alone."""
    _materialize_model(layout.model_dir(scenario), scenario.model)
    for drafter in scenario.drafters:
        _materialize_drafter(layout.drafter_dir(drafter), drafter, scenario.model)
    checkout = layout.specforge_dir(scenario)
    for script in ("regenerate_train_data.py", "prepare_data.py", "prepare_hidden_states.py"):
        path = checkout / "scripts" / script
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_SCRIPT, encoding="utf-8")
    _materialize_environment(layout, scenario)
    _write_json(layout.draft_config(scenario), draft_config(scenario.model))
    if not layout.dataset(scenario).is_file():
        write_jsonl(layout.dataset(scenario), generic_records(scenario.training.dataset_samples))
    (layout.root / "gpu").mkdir(parents=True, exist_ok=True)
