"""``scripts/prepare_data.py`` stand-in: write a generic conversation data set (SpecForge's checkout).

The real script downloads ShareGPT and similar sets from the hub; the simulated host has them
"cached": people's conversations, not the target's own answers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from twin.datasets import generic_records, write_jsonl
from twin.loader import ScenarioError, load_scenario


def main(argv: list[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    split = arguments.index("--") if "--" in arguments else len(arguments)
    own = argparse.ArgumentParser(prog="twin.prepare_data")
    own.add_argument("--scenario", required=True)
    own.add_argument("--sim-root", required=True)
    sim = own.parse_args(arguments[:split])
    parser = argparse.ArgumentParser(prog="prepare_data.py")
    parser.add_argument("--dataset", required=True, choices=["sharegpt", "ultrachat", "perfectblend", "opc"])
    parser.add_argument("--data-path")
    parser.add_argument("--output-path", type=Path, default=Path("cache/dataset"))
    parser.add_argument("--sample-size", type=int)
    parser.add_argument("--split-eval", action="store_true")
    options = parser.parse_args(arguments[split + 1 :])
    try:
        scenario, _ = load_scenario(sim.scenario)
    except ScenarioError as error:
        print(error, file=sys.stderr)
        return 2
    records = generic_records(options.sample_size or scenario.training.dataset_samples)
    path = options.output_path / f"{options.dataset}_train.jsonl"
    if options.split_eval:
        cut = max(1, len(records) // 20)
        write_jsonl(options.output_path / f"{options.dataset}_test.jsonl", records[:cut])
        records = records[cut:]
    write_jsonl(path, records)
    print(f"Saved {len(records)} records to {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
