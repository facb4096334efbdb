"""``scripts/prepare_hidden_states.py`` stand-in: capture the target's hidden states for offline training.

Usage (written by the command translation, from ``python prepare_hidden_states.py ...``, ``torchrun
[options] prepare_hidden_states.py ...`` or ``python -m torch.distributed.run ...``)::

    python -m twin.hidden_states --scenario F --sim-root D --interpreter PYTHON --nproc-per-node N -- <flags>

The interpreter's environment must have the script's imports (torch, specforge, sglang) and must not be
broken; the flags are those of the checkout's revision (``[training] prepare_script``). The target is loaded
like an SGLang launch (:mod:`twin.hidden_states.target`), then one feature file per sample is written
(:mod:`twin.hidden_states.features`) with what the target's hidden states would carry.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from twin.clock import SimClock
from twin.datasets import alignment_counts, read_jsonl
from twin.environments import PythonEnvironment, environment_of
from twin.hidden_states.features import EAGLE3_KEYS, feature_path, write_feature
from twin.hidden_states.flags import parser
from twin.hidden_states.target import CaptureError, load_target
from twin.layout import SimLayout
from twin.loader import ScenarioError, load_scenario
from twin.scenario import Scenario


def _own(arguments: list[str]) -> argparse.Namespace:
    own = argparse.ArgumentParser(prog="twin.hidden_states")
    own.add_argument("--scenario", required=True)
    own.add_argument("--sim-root", required=True, type=Path)
    own.add_argument("--interpreter", default="python")
    own.add_argument("--nproc-per-node", type=int, default=1)
    return own.parse_args(arguments)


def _imports(environment: PythonEnvironment) -> None:
    """The script imports torch, then specforge (whose offline capture needs sglang)."""
    for module in ("torch", "specforge", "sglang"):
        if environment.version(module) is None:
            raise CaptureError(f"ModuleNotFoundError: No module named '{module}'")
    if environment.error:
        raise CaptureError(environment.error)


def _capture_layers(options: argparse.Namespace, scenario: Scenario, revision: str) -> list[int]:
    layers = scenario.model.num_layers
    default = [1, layers // 2 - 1, layers - 4]
    if revision == "strategy":
        if options.draft_model_config is None:
            raise CaptureError("TypeError: expected str, bytes or os.PathLike object, not NoneType")
        path = Path(options.draft_model_config).expanduser()
        if not path.is_file() or path.suffix.lower() != ".json":
            raise CaptureError(
                f"FileNotFoundError: --draft-model-config must point to an existing local JSON file: {path}"
            )
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as error:
            raise CaptureError(f"ValueError: invalid draft config JSON {path}: {error}") from None
        size = config.get("draft_vocab_size", config.get("vocab_size")) if isinstance(config, dict) else None
        if not isinstance(size, int) or size <= 0:
            raise CaptureError(f"ValueError: draft model config {str(path)!r} must define a positive draft_vocab_size")
        ids = (config.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
        return [int(layer) for layer in ids] if isinstance(ids, list) and ids else default
    text = options.capture_layers if revision == "capture-layers" else options.aux_hidden_states_layers
    try:
        return [int(part) for part in text.split(",")] if text else default
    except ValueError:
        raise CaptureError("ValueError: capture layers must be comma-separated integers") from None


def _records(options: argparse.Namespace) -> list[dict[str, Any]]:
    path = Path(options.data_path)
    if not path.exists():
        raise CaptureError(f"AssertionError: Dataset path {path} does not exist")
    try:
        records = read_jsonl(path)
    except (OSError, ValueError) as error:
        raise CaptureError(f"ValueError: {error}") from None
    records = records[: options.num_samples] if options.num_samples is not None else records
    if not records:
        raise CaptureError("ValueError: no samples satisfy eagle3 training eligibility")
    return records


def prepare(options: argparse.Namespace, scenario: Scenario, layout: SimLayout, sglang: str, processes: int) -> int:
    revision = scenario.training.prepare_script
    if processes % options.tp_size:
        raise CaptureError(f"AssertionError: world size {processes} is not divisible by tp size {options.tp_size}")
    layers = _capture_layers(options, scenario, revision)
    output = Path(options.output_path or layout.specforge_dir(scenario) / "cache" / "hidden_states")
    print(f"Resolved eagle3 offline capture method 'eagle3', layers: {layers}", flush=True)
    records = _records(options)
    ledger = load_target(options, scenario, layout, sglang, processes // options.tp_size)
    print(f"Dataset prepared with {len(records)} samples.", flush=True)
    if revision == "strategy":
        mapping = output / "vocab_mapping" / "vocab_mapping.pt"
        write_feature(mapping, {"simulated": True, "kind": "vocab_mapping"})
        print(f"Vocabulary mapping ready at {mapping}", flush=True)
    aux = revision != "aux-hidden-states" or options.enable_aux_hidden_states
    keys = list(EAGLE3_KEYS if aux else EAGLE3_KEYS[:3])
    clock = SimClock(scenario.time_scale)
    per_sample = scenario.training.prepare_seconds_per_sample * options.tp_size / processes
    try:
        for index, record in enumerate(records):
            clock.sleep(per_sample)
            target, total = alignment_counts(record)
            text = " ".join(str(turn) for turn in record.get("conversations") or record.get("messages") or [])
            document = {
                "simulated": True,
                "format": "offline_eagle3",
                "keys": keys,
                "id": record.get("id"),
                "tokens": min(options.max_length, max(1, len(text.split()) * 4 // 3)),
                "assistant_turns": total,
                "target_turns": target,
                "capture_layers": layers,
                "target_model": options.target_model_path,
            }
            write_feature(feature_path(output, index, options.file_group_size, options.compress), document)
            if (index + 1) % max(1, len(records) // 10) == 0 or index + 1 == len(records):
                print(f"Generating hidden states: {index + 1}/{len(records)}", flush=True)
    finally:
        ledger.release()
    print(f"\nGeneration loop finished. Processed: {len(records)}, Skipped: 0", flush=True)
    print("All hidden states generated or job finished.", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    split = arguments.index("--") if "--" in arguments else len(arguments)
    own = _own(arguments[:split])
    try:
        scenario, _ = load_scenario(own.scenario)
    except ScenarioError as error:
        print(error, file=sys.stderr)
        return 2
    layout = SimLayout(own.sim_root)
    environment = environment_of(own.interpreter, scenario, layout)
    try:
        _imports(environment)
        options = parser(scenario.training.prepare_script).parse_args(arguments[split + 1 :])
        return prepare(options, scenario, layout, str(environment.version("sglang")), own.nproc_per_node)
    except CaptureError as error:
        print(
            f'Traceback (most recent call last):\n  File "scripts/prepare_hidden_states.py", line 1, in <module>\n'
            f"{error}",
            file=sys.stderr,
            flush=True,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
