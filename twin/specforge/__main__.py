"""``specforge`` command stand-in: ``train`` and ``export`` with SpecForge's flags (SpecForge ``specforge/cli.py``).

Usage (written by the command translation)::

    python -m twin.specforge --scenario F --sim-root D [--interpreter PROGRAM] -- train -c run.yaml

``--interpreter`` is the program that was asked for (``specforge`` or a python): it decides the environment
(:mod:`twin.environments`), which must have specforge installed and must not be broken.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from twin.environments import environment_of
from twin.layout import SimLayout
from twin.loader import ScenarioError, load_scenario
from twin.specforge.config import ConfigError, load_config
from twin.specforge.export import export
from twin.specforge.train import TrainingError, fail, train


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specforge")
    commands = parser.add_subparsers(dest="command", required=True)
    training = commands.add_parser("train", help="train a draft model")
    training.add_argument("-c", "--config", required=True, type=Path)
    training.add_argument("--role", choices=["auto", "all", "producer", "consumer", "both"], default="auto")
    training.add_argument("--node-rank", type=int, default=0)
    training.add_argument("--plan", action="store_true")
    training.add_argument("overrides", nargs="*", help="section.field=value")
    exporting = commands.add_parser("export", help="export a checkpoint")
    exporting.add_argument("--to", required=True, choices=["hf", "sglang"])
    exporting.add_argument("--checkpoint", required=True, type=Path)
    exporting.add_argument("--draft-config", required=True, type=Path)
    exporting.add_argument("--output-dir", required=True, type=Path)
    exporting.add_argument("--vocab-mapping")
    exporting.add_argument("--embedding-source")
    exporting.add_argument("--embedding-key", default="model.embed_tokens.weight")
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    own = argparse.ArgumentParser(prog="twin.specforge")
    own.add_argument("--scenario", required=True)
    own.add_argument("--sim-root", required=True, type=Path)
    own.add_argument("--interpreter", default="specforge")
    split = arguments.index("--") if "--" in arguments else len(arguments)
    sim = own.parse_args(arguments[:split])
    try:
        scenario, _ = load_scenario(sim.scenario)
    except ScenarioError as error:
        print(error, file=sys.stderr)
        return 2
    environment = environment_of(sim.interpreter, scenario, SimLayout(sim.sim_root))
    if environment.version("specforge") is None:
        if Path(sim.interpreter).name.startswith("python"):
            print(f"{sim.interpreter}: No module named specforge", file=sys.stderr)
            return 1
        print(f"{sim.interpreter}: command not found", file=sys.stderr)
        return 127
    if environment.error:
        return fail(TrainingError(environment.error))
    parsed = _parser().parse_args(arguments[split + 1 :])
    try:
        if parsed.command == "export":
            return export(parsed.to, parsed.checkpoint, parsed.draft_config, parsed.output_dir)
        config = load_config(parsed.config, parsed.overrides)
        return train(config, scenario, SimLayout(sim.sim_root), parsed.plan)
    except ConfigError as error:
        print(f"specforge train: error: {error}", file=sys.stderr)
        return 2
    except TrainingError as error:
        return fail(error)


if __name__ == "__main__":
    sys.exit(main())
