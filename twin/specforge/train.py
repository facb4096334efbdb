"""``specforge train`` stand-in: SpecForge-format progress and runtime checkpoints in accelerated time.

Quality model (:mod:`twin.specforge.data`): a drafter trained to convergence reaches the scenario's
``target_accept_length`` on data the target regenerated and ``generic_accept_length`` on other data, blended
by the share of assistant turns the target would have written; convergence follows
``1 - exp(-3 * steps / steps_to_converge)``. Offline runs with held-out features
(``data.eval_hidden_states_path``, ``training.eval_interval``) print SpecForge's ``eval/*`` metrics.
Progress lines follow ``step {N}: {dict}`` [SF@a6b6b02 training/assembly.py:291] with the keys of
training/controller.py:285-301; checkpoints follow training/checkpoint.py:9-67.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import sys
from pathlib import Path
from typing import Any

from twin.clock import SimClock
from twin.engine.physics import visible_gpus
from twin.layout import SimLayout
from twin.ledger import GpuLedgerEntry, memory_in_use
from twin.ports import PortMap
from twin.quality import REFERENCE_STEPS, accept_length
from twin.scenario import Scenario
from twin.specforge.data import DataError, evaluation_data, training_data

START_ACCEPTANCE = 0.05
HELD_OUT = 0.98  # held-out samples are predicted a little worse than the training samples


class TrainingError(Exception):
    """Fails the run with this message (exit status 1), as SpecForge would."""


def _model_is_target(path: str, scenario: Scenario, layout: SimLayout) -> bool:
    return path == scenario.model.name or (
        Path(path).exists() and Path(path).resolve() == layout.model_dir(scenario).resolve()
    )


def _gpus(config: dict[str, Any], scenario: Scenario, layout: SimLayout) -> list[int]:
    trainer = (config.get("deployment") or {}).get("trainer") or {}
    needed = int(trainer.get("nproc_per_node") or 1)
    visible = visible_gpus(scenario, os.environ)
    if len(visible) < needed:
        raise TrainingError(f"RuntimeError: nproc_per_node={needed} but only {len(visible)} GPUs are visible")
    used = visible[:needed]
    need_mib = scenario.training.gpu_memory_gib * 1024
    held = memory_in_use(layout.root, scenario.host.gpu_count)
    for index in used:
        free = scenario.host.gpu_group(index).memory_mib - held[index] - scenario.host.idle_gpu_memory_mib
        if need_mib and free < need_mib:
            raise TrainingError(
                f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {need_mib / 1024:.2f} GiB. "
                f"GPU {index} has a total capacity of "
                f"{scenario.host.gpu_group(index).memory_mib / 1024:.2f} GiB of which {max(free, 0):.2f} "
                f"MiB is free. Process has {held[index]:.0f} MiB memory in use by other processes."
            )
    return used


def _accuracies(acceptance: float, ttt_length: int) -> list[float]:
    """Per-position accuracy: later positions predict from the draft's own earlier guesses, a little worse."""
    return [acceptance * 0.985**position for position in range(ttt_length)]


def _eval_metrics(acceptance: float, ttt_length: int) -> dict[str, Any]:
    """SpecForge's evaluator keys (``specforge/eval/evaluator.py``); ``simulated_acc_len`` is the sum over
    positions of the product of accuracies so far, without the bonus token."""
    accuracies = [round(value, 4) for value in _accuracies(acceptance * HELD_OUT, ttt_length)]
    metrics: dict[str, Any] = {
        "eval/avg_loss": round(sum(0.8**k * (0.35 - math.log(max(a, 1e-6))) for k, a in enumerate(accuracies)), 4),
        "eval/avg_acc": accuracies[0],
        "eval/per_position_acc": accuracies,
    }
    product, simulated = 1.0, 0.0
    for position, accuracy in enumerate(accuracies):
        product *= accuracy
        simulated += product
        metrics[f"eval/acceptance_rate_{position}"] = round(product, 4)
    metrics["eval/simulated_acc_len"] = round(simulated, 4)
    return metrics


def _step_metrics(acceptance: float, ttt_length: int, learning_rate: float) -> dict[str, float]:
    accuracies = _accuracies(acceptance, ttt_length)
    metrics: dict[str, float] = {}
    product = 1.0
    for position, accuracy in enumerate(accuracies):
        product *= accuracy
        metrics[f"acc_{position}"] = round(accuracy, 4)
        metrics[f"ploss_{position}"] = round(-math.log(max(accuracy, 1e-6)) + 0.35, 4)
        metrics[f"acceptance_rate_{position}"] = round(product, 4)
    metrics["acc"] = round(sum(accuracies) / len(accuracies), 4)
    metrics["loss"] = round(sum(0.8**position * metrics[f"ploss_{position}"] for position in range(ttt_length)), 4)
    metrics["acceptance_rate"] = round(sum(metrics[f"acceptance_rate_{p}"] for p in range(ttt_length)) / ttt_length, 4)
    metrics["lr"] = learning_rate
    return metrics


def _save(output_dir: Path, run_id: str, step: int, state: dict[str, Any], ranks: int) -> Path:
    directory = output_dir / f"{run_id}-step{step}"
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(state, indent=2) + "\n"
    (directory / "training_state.pt").write_text(text, encoding="utf-8")
    for rank in range(ranks):
        (directory / f"training_state_rank{rank}.pt").write_text(text, encoding="utf-8")
    for alias in ("latest", "best"):
        link = output_dir / f"{run_id}-{alias}"
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
        link.symlink_to(directory.name)
    (output_dir / f"{run_id}.best_meta.json").write_text(
        json.dumps(
            {
                "step": step,
                "path": str(directory),
                "metric": "simulated_acc_len",
                "value": state["simulated_acc_len"],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    return directory


def _answers(address: str) -> bool:
    ports = PortMap.from_environment()
    address = ports.reach_url(address) if ports is not None else address
    host, _, port = address.removeprefix("http://").split("/", 1)[0].rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=1.0):
            return True
    except (OSError, ValueError):
        return False


def _online_services(config: dict[str, Any]) -> None:
    """Online training needs Mooncake and capture servers; SpecForge starts them only for managed_local.

    No stand-in serves SpecForge's capture contract (a patched SGLang with --enable-spec-capture), so
    outside managed_local online training fails here as it would against an unpatched server.
    """
    disaggregated = (config.get("deployment") or {}).get("disaggregated") or {}
    if disaggregated.get("managed_local") is not None:
        return
    master = str(disaggregated.get("mooncake_master_server_addr") or "")
    if not master or not _answers(master):
        raise TrainingError(
            f"RuntimeError: cannot reach the Mooncake master at {master or '(not set)'}; start "
            "mooncake_master or add deployment.disaggregated.managed_local"
        )
    for url in disaggregated.get("server_urls") or []:
        raise TrainingError(
            f"RuntimeError: capture server {url} does not serve the capture contract; start the "
            "target with SpecForge's SGLang and --enable-spec-capture --chunked-prefill-size -1"
        )


def train(config: dict[str, Any], scenario: Scenario, layout: SimLayout, plan_only: bool) -> int:
    model, training = config["model"], config.get("training") or {}
    online = not (config.get("data") or {}).get("hidden_states_path")
    if not _model_is_target(str(model["target_model_path"]), scenario, layout):
        raise TrainingError(f"OSError: target model {model['target_model_path']} not found on this host")
    try:
        data, held_out = training_data(config), evaluation_data(config)
    except DataError as error:
        raise TrainingError(str(error)) from None
    final, alignment, records = data.acceptance(scenario), data.alignment, data.records
    batch = int(training.get("batch_size") or 1)
    steps = int(training.get("max_steps") or int(training.get("num_epochs") or 10) * math.ceil(records / batch))
    ttt, rate = int(training.get("ttt_length") or 7), float(training.get("learning_rate") or 1e-4)
    log_every, save_every = (
        int(training.get("log_interval") or 50),
        int(training.get("save_interval") or 1000),
    )
    # Evaluation reads offline features (data.eval_hidden_states_path); online runs print no eval metrics.
    eval_every = int(training.get("eval_interval") or 0) if held_out is not None else 0
    run_id, output_dir = str(config.get("run_id") or "run"), Path(str(config["output_dir"]))
    print(
        f"Training plan: strategy={training.get('strategy', 'eagle3')}, records={records}, "
        f"batch_size={batch}, "
        f"total_steps={steps}, ttt_length={ttt}, output_dir={output_dir}, run_id={run_id}",
        flush=True,
    )
    if plan_only:
        return 0
    if online:
        _online_services(config)
    gpus = _gpus(config, scenario, layout)
    ledger = GpuLedgerEntry(layout.root)
    ledger.update({gpu: int(scenario.training.gpu_memory_gib * 1024) for gpu in gpus}, "training")
    clock, converge = SimClock(scenario.time_scale), scenario.training.steps_to_converge
    try:
        for step in range(1, steps + 1):
            clock.sleep(scenario.training.seconds_per_step)
            acceptance = START_ACCEPTANCE + (final - START_ACCEPTANCE) * (1 - math.exp(-3 * step / converge))
            if step % log_every == 0 or step == steps:
                print(f"step {step}: {_step_metrics(acceptance, ttt, rate)}", flush=True)
            simulated = accept_length(acceptance, REFERENCE_STEPS) - 1.0
            if eval_every and (step % eval_every == 0 or step == steps):
                print(f"step {step}: {_eval_metrics(acceptance, ttt)}", flush=True)
            if step % save_every == 0 or step == steps:
                state = {
                    "step": step,
                    "per_position_acceptance": round(acceptance, 6),
                    "simulated_acc_len": round(simulated, 4),
                    "data_alignment": round(alignment, 4),
                    "ttt_length": ttt,
                    "target_model": str(model["target_model_path"]),
                    "simulated": True,
                }
                saved = _save(output_dir, run_id, step, state, len(gpus))
                print(f"Saved checkpoint to {saved}", flush=True)
    finally:
        ledger.release()
    print(
        f"Training finished after {steps} steps; latest checkpoint {output_dir / (run_id + '-latest')}",
        flush=True,
    )
    return 0


def fail(error: Exception) -> int:
    print(
        f'Traceback (most recent call last):\n  File "specforge/cli.py", line 88, in main\n{error}',
        file=sys.stderr,
        flush=True,
    )
    return 1
