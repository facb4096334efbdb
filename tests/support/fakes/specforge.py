"""Stand-in for SpecForge's ``specforge`` console script (train and export), for the drafter tests.

Prints progress in SpecForge's real format (``step {N}: {dict}``, eval keys prefixed ``eval/``) and
writes runtime checkpoints (``{run_id}-step{N}/training_state.pt`` plus the ``{run_id}-latest`` link)
and an exported drafter directory, like the real CLI (SpecForge ``specforge/cli.py``,
``training/assembly.py``, ``training/checkpoint.py``). Knobs for tests:
``FAKE_SPECFORGE_STEP_SECONDS`` (time per step) and ``FAKE_SPECFORGE_FAIL=train|export``.
"""

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path


def scalar(config: str, key: str, default: str | None = None) -> str | None:
    match = re.search(rf"^\s*{key}: (.*)$", config, re.MULTILINE)
    return (
        json.loads(match.group(1))
        if match and match.group(1).startswith('"')
        else (match.group(1) if match else default)
    )


def fail(message: str) -> int:
    print('Traceback (most recent call last):\n  File "specforge/cli.py", line 88, in main', file=sys.stderr)
    print(message, file=sys.stderr, flush=True)
    return 1


def train(config_path: Path) -> int:
    config = config_path.read_text(encoding="utf-8")
    output_dir, run_id = Path(str(scalar(config, "output_dir"))), str(scalar(config, "run_id"))
    data = Path(str(scalar(config, "train_data_path")))
    if os.environ.get("FAKE_SPECFORGE_FAIL") == "train":
        return fail("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    if not data.is_file() or not data.read_text(encoding="utf-8").strip():
        return fail(f"FileNotFoundError: no training records in {data}")
    steps, interval = int(str(scalar(config, "max_steps", "40"))), int(str(scalar(config, "log_interval", "10")))
    pause = float(os.environ.get("FAKE_SPECFORGE_STEP_SECONDS", "0"))
    for step in range(1, steps + 1):
        time.sleep(pause)
        quality = step / steps
        if step % interval == 0:
            accuracies = [round(0.3 + 0.4 * quality - 0.1 * position, 4) for position in range(3)]
            metrics = {f"acc_{position}": value for position, value in enumerate(accuracies)}
            metrics.update({f"ploss_{position}": round(2.0 - value, 4) for position, value in enumerate(accuracies)})
            metrics.update(
                {
                    "acc": round(sum(accuracies) / 3, 4),
                    "loss": round(3.0 - 2.0 * quality, 4),
                    "acceptance_rate": round(accuracies[0] * 0.9, 4),
                    "lr": 5e-05,
                    "perf/durable_ack_time_s": float("nan"),
                }
            )
            print(f"step {step}: {metrics}", flush=True)
        if step % (2 * interval) == 0:
            per_position = [round(0.5 + 0.3 * quality - 0.1 * position, 4) for position in range(3)]
            product, simulated = 1.0, 0.0
            for value in per_position:
                product *= value
                simulated += product
            print(
                f"step {step}: {{'eval/avg_loss': {round(2.5 - quality, 4)}, 'eval/avg_acc': {per_position[0]}, "
                f"'eval/per_position_acc': {per_position}, 'eval/simulated_acc_len': {round(simulated, 4)}}}",
                flush=True,
            )
    checkpoint = output_dir / f"{run_id}-step{steps}"
    checkpoint.mkdir(parents=True, exist_ok=True)
    (checkpoint / "training_state.pt").write_text(json.dumps({"step": steps}), encoding="utf-8")
    latest = output_dir / f"{run_id}-latest"
    latest.unlink(missing_ok=True)
    latest.symlink_to(checkpoint.name)
    return 0


def export(to: str, checkpoint: Path, draft_config: Path, output_dir: Path) -> int:
    if os.environ.get("FAKE_SPECFORGE_FAIL") == "export" or not (checkpoint / "training_state.pt").is_file():
        return fail(f"FileNotFoundError: {checkpoint} is not a runtime checkpoint")
    config = json.loads(draft_config.read_text(encoding="utf-8"))
    if to == "sglang" and config.get("architectures") != ["LlamaForCausalLMEagle3"]:
        return fail("NotImplementedError: export to sglang handles only LlamaForCausalLMEagle3 drafts")
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (output_dir / "model.safetensors").write_bytes(b"\0" * 16)
    print(f"Exported {checkpoint} to {output_dir}", flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="specforge")
    commands = parser.add_subparsers(dest="command", required=True)
    training = commands.add_parser("train")
    training.add_argument("-c", "--config", required=True, type=Path)
    exporting = commands.add_parser("export")
    exporting.add_argument("--to", required=True, choices=["hf", "sglang"])
    exporting.add_argument("--checkpoint", required=True, type=Path)
    exporting.add_argument("--draft-config", required=True, type=Path)
    exporting.add_argument("--output-dir", required=True, type=Path)
    exporting.add_argument("--vocab-mapping")
    options = parser.parse_args()
    if options.command == "train":
        return train(options.config)
    return export(options.to, options.checkpoint, options.draft_config, options.output_dir)


if __name__ == "__main__":
    sys.exit(main())
