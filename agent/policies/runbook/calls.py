"""The tool calls the runbook makes, built from its progress record and settings."""

from __future__ import annotations

import copy
from typing import Any

from agent.actions import ToolCall
from agent.policies.runbook.progress import Purpose, RunbookProgress
from agent.policies.runbook.settings import RunbookSettings
from agent.state import ProjectState

SPECULATIVE_PURPOSES: tuple[Purpose, ...] = ("offshelf", "trained")


def call(state: ProjectState, tool: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(id=f"runbook-{state.step}-{tool}", tool=tool, arguments=arguments)


def drafter_for(progress: RunbookProgress, purpose: Purpose) -> str | None:
    if purpose == "final":
        purpose = progress.chosen or "baseline"
    if purpose == "offshelf":
        return progress.offshelf_drafter
    if purpose == "trained":
        return progress.trained_drafter
    return None


def launch_config(progress: RunbookProgress, purpose: Purpose, settings: RunbookSettings) -> dict[str, Any]:
    """The base config, plus EAGLE-3 with the drafter this purpose is about."""
    config = copy.deepcopy(progress.base_config)
    drafter = drafter_for(progress, purpose)
    if drafter is not None:
        # Topk 1, 3 steps, 4 draft tokens: the setting published EAGLE-3 Kimi drafters are measured at.
        config["speculative"] = {
            "algorithm": "EAGLE3",
            "draft_model_path": drafter,
            "num_steps": 3,
            "eagle_topk": 1,
            "num_draft_tokens": 4,
        }
        # SGLang caps running requests at 48 under speculation unless set explicitly (0.5.8 ``srt/server_args.py``).
        config["max_running_requests"] = max(config.get("max_running_requests") or 0, settings.peak_concurrency)
    return config


def launch(state: ProjectState, progress: RunbookProgress, settings: RunbookSettings) -> ToolCall:
    arguments: dict[str, Any] = {
        "config": launch_config(progress, progress.purpose, settings),
        "name": progress.attempts[-1].process,
        "poll_seconds": settings.launch_poll_seconds,
        "health_every_seconds": settings.health_every_seconds,
    }
    if progress.node_env:
        arguments["node_env"] = progress.node_env
    return call(state, "launch_engine", arguments)


def bench_arguments(progress: RunbookProgress, settings: RunbookSettings, single_stream: bool) -> dict[str, Any]:
    concurrency = 1 if single_stream else settings.peak_concurrency
    prompts = settings.single_stream_prompts if single_stream else settings.peak_prompts
    kind = "single-stream" if single_stream else "peak"
    return {
        "base_url": progress.agent_url,
        "model": progress.served_model,
        "concurrency": [concurrency],
        "num_prompts": prompts,
        "input_len": settings.input_len,
        "output_len": settings.output_len,
        "label": f"{progress.purpose} {kind}",
        "correctness_probe": False,
    }


def _pick(paths: list[str], words: list[str]) -> str | None:
    for word in words:
        for path in paths:
            if word and word in path.rsplit("/", 1)[-1].lower():
                return path
    return paths[0] if len(paths) == 1 else None


def training_inputs(state: ProjectState, progress: RunbookProgress) -> dict[str, str] | None:
    """SpecForge checkout, draft config and dataset for the target, from the probe; None when missing."""
    environment = state.environment
    family = (progress.served_model or "").lower().split("-")[0]
    model_type = (state.model.architecture or "").lower()
    config = _pick(environment.specforge_draft_configs, [family, model_type])
    dataset = _pick(environment.specforge_datasets, ["train", "sharegpt"])
    if not environment.specforge_dir or config is None or dataset is None:
        return None
    return {"specforge_dir": environment.specforge_dir, "draft_model_config": config, "input_data_path": dataset}


# SpecForge's chat templates (``specforge/data/template.py``) for target families the runbook recognises by
# architecture; the script's and the run config's default, llama3, would format other families' turns wrongly.
CHAT_TEMPLATES = {"Kimi": "kimi-k2-instruct", "DeepseekV3": "deepseek-v3", "Llama": "llama3"}


def chat_template(architecture: str | None) -> str | None:
    return next((name for prefix, name in CHAT_TEMPLATES.items() if (architecture or "").startswith(prefix)), None)


def train_drafter(
    state: ProjectState,
    progress: RunbookProgress,
    settings: RunbookSettings,
    inputs: dict[str, str],
    **chosen: Any,
) -> ToolCall:
    """train_drafter for the offline route, set up like the serving engine: its tensor parallelism, its
    environment (e.g. NCCL settings a remedy added) and, for SGLang, the attention backend that works here.
    ``chosen`` adds the call's own arguments (name, stages, dry_run, train_data_path)."""
    server = (progress.base_url or "").removeprefix("http://").removeprefix("https://").rstrip("/")
    config = progress.base_config
    arguments: dict[str, Any] = {
        "target_model_path": progress.target_path,
        "target_server": server,
        "served_model_name": progress.served_model,
        "num_samples": settings.drafter_samples,
        "num_epochs": settings.drafter_epochs,
        "target_tp_size": config.get("tp_size") or 1,
        "trust_remote_code": bool(config.get("trust_remote_code")),
        "env": dict(config.get("env") or {}),
        "wait": False,
        **inputs,
        **chosen,
    }
    if progress.engine == "sglang" and config.get("attention_backend"):
        arguments["prepare_attention_backend"] = config["attention_backend"]
    template = chat_template(state.model.architecture)
    if template:
        arguments["chat_template"] = template
    return call(state, "train_drafter", arguments)


def drafter_status(state: ProjectState, progress: RunbookProgress) -> ToolCall:
    return call(state, "drafter_status", {"name": progress.training_job})


def wait_for_drafter(state: ProjectState, settings: RunbookSettings) -> ToolCall:
    return call(state, "wait", {"seconds": settings.drafter_poll_seconds, "reason": "drafter training"})
