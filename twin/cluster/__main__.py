"""``python -m twin.cluster up SCENARIO DIR`` / ``python -m twin.cluster down DIR``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from twin.cluster.build import Cluster, up
from twin.cluster.network import ClusterUnavailable
from twin.loader import ScenarioError, load_scenario


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m twin.cluster", description="Namespaced nodes for a scenario.")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("up", help="build the scenario's nodes, each with an sshd")
    build.add_argument("scenario")
    build.add_argument("directory", type=Path)
    remove = commands.add_parser("down", help="stop the servers and remove the namespaces")
    remove.add_argument("directory", type=Path)
    parsed = parser.parse_args(argv)
    try:
        if parsed.command == "down":
            Cluster.load(parsed.directory).down()
            return 0
        scenario, _ = load_scenario(parsed.scenario)
        cluster = up(scenario, parsed.directory.absolute())
    except (ClusterUnavailable, ScenarioError, OSError) as error:
        print(f"twin.cluster: {error}", file=sys.stderr)
        return 1
    hosts = " ".join(f"--host {alias}" for alias in cluster.aliases)
    print(f"HOME={cluster.home} agent run --sim {scenario.name} {hosts} --goal ...")
    return 0


if __name__ == "__main__":
    sys.exit(main())
