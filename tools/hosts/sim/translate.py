"""Map real command lines onto the simulated host's stand-in processes.

Recognised (the program may be given by any path; python options before ``-m``/``-c`` are dropped):

- ``<python> -m sglang.launch_server ...``, ``sglang serve ...`` -> engine stand-in (SGLang flags kept)
- ``vllm serve <model> ...``, ``<python> -m vllm.entrypoints.openai.api_server ...`` -> engine stand-in (vLLM)
- ``specforge train|export ...``, ``<python> -m specforge ...`` -> SpecForge stand-in
- ``<python> [path/]regenerate_train_data.py ...``, ``prepare_data.py ...`` -> data stand-ins
- ``<python> [path/]prepare_hidden_states.py ...``, also under ``torchrun [options]`` or
  ``<python> -m torch.distributed.run [options]`` -> the hidden-state preparation stand-in
- ``<python> -c SNIPPET`` -> the simulated interpreter (the scenario decides which packages exist)

The SpecForge, preparation and interpreter stand-ins are told which program was asked for
(``--interpreter``): SpecForge's own environment and the engine's have different packages.
- ``nvidia-smi``, ``lscpu``, ``nproc``, ``free``, ``df``, ``dmesg``, ``ss`` -> host command stand-in

Everything else runs unchanged. Translating a translated command returns it as it is.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

STAND_IN_PREFIX = "twin."
HOST_COMMANDS = {"nvidia-smi", "lscpu", "nproc", "free", "df", "dmesg", "ss"}
ENGINE_MODULES = {"sglang.launch_server": "sglang", "vllm.entrypoints.openai.api_server": "vllm"}
SPECFORGE_MODULES = {"specforge", "specforge.cli", "specforge.__main__"}
DATA_SCRIPTS = {
    "regenerate_train_data.py": "twin.regenerate",
    "prepare_data.py": "twin.prepare_data",
}
HIDDEN_STATES_SCRIPT = "prepare_hidden_states.py"
TORCHRUN_MODULES = {"torch.distributed.run", "torch.distributed.launch"}
_PYTHON = re.compile(r"python(\d+(\.\d+)*)?")
_OPTIONS_WITH_VALUE = {"-X", "-W", "-Q"}
# torchrun options that take a separate value (``--name value``); ``--name=value`` needs no entry.
_TORCHRUN_VALUES = {
    "--nproc_per_node",
    "--nproc-per-node",
    "--nnodes",
    "--node_rank",
    "--node-rank",
    "--master_addr",
    "--master-addr",
    "--master_port",
    "--master-port",
    "--rdzv_backend",
    "--rdzv-backend",
    "--rdzv_endpoint",
    "--rdzv-endpoint",
    "--rdzv_id",
    "--rdzv-id",
    "--max_restarts",
    "--max-restarts",
    "--log_dir",
    "--log-dir",
}


def is_python(program: str) -> bool:
    return bool(_PYTHON.fullmatch(Path(program).name))


def is_stand_in(argv: list[str]) -> bool:
    return len(argv) >= 3 and argv[1] == "-m" and argv[2].startswith(STAND_IN_PREFIX)


def _python_target(argv: list[str]) -> tuple[str, str, list[str]] | None:
    """(kind, target, rest) for a python command line: kind is "-m", "-c" or "script"."""
    index = 1
    while index < len(argv):
        item = argv[index]
        if item in ("-m", "-c"):
            if index + 1 >= len(argv):
                return None
            return item, argv[index + 1], argv[index + 2 :]
        if item in _OPTIONS_WITH_VALUE:
            index += 2
            continue
        if item.startswith("-"):
            index += 1
            continue
        return "script", item, argv[index + 1 :]
    return None


def torchrun_script(arguments: list[str]) -> tuple[int, str, list[str]] | None:
    """(processes per node, script, its arguments) of a torchrun command line's arguments."""
    processes, index = 1, 0
    while index < len(arguments):
        item = arguments[index]
        if not item.startswith("-"):
            return processes, item, arguments[index + 1 :]
        name, equals, value = item.partition("=")
        if not equals and name in _TORCHRUN_VALUES:
            value, index = (arguments[index + 1] if index + 1 < len(arguments) else ""), index + 1
        if name in ("--nproc_per_node", "--nproc-per-node") and value.isdigit():
            processes = int(value)
        index += 1
    return None


class Translator:
    def __init__(self, scenario_file: Path, sim_root: Path) -> None:
        self.scenario_file, self.sim_root = scenario_file, sim_root

    def _stand_in(self, module: str, *arguments: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            module,
            "--scenario",
            str(self.scenario_file),
            "--sim-root",
            str(self.sim_root),
            *arguments,
        ]

    def _engine(self, engine: str, entry: str, flags: list[str]) -> list[str]:
        return self._stand_in("twin.engine", "--engine", engine, "--entry", entry, "--", *flags)

    def _hidden_states(self, program: str, processes: int, rest: list[str]) -> list[str]:
        return self._stand_in(
            "twin.hidden_states", "--interpreter", program, "--nproc-per-node", str(processes), "--", *rest
        )

    def _torchrun(self, program: str, arguments: list[str], original: list[str]) -> list[str]:
        found = torchrun_script(arguments)
        if found is not None and Path(found[1]).name == HIDDEN_STATES_SCRIPT:
            return self._hidden_states(program, found[0], found[2])
        return list(original)

    def translate(self, argv: list[str]) -> list[str]:
        if not argv or is_stand_in(argv):
            return list(argv)
        program = Path(argv[0]).name
        if is_python(argv[0]):
            target = _python_target(argv)
            if target is None:
                return list(argv)
            kind, name, rest = target
            if kind == "-m" and name in ENGINE_MODULES:
                return self._engine(ENGINE_MODULES[name], "module", rest)
            if kind == "-m" and name in SPECFORGE_MODULES:
                return self._stand_in("twin.specforge", "--interpreter", argv[0], "--", *rest)
            if kind == "-m" and name in TORCHRUN_MODULES:
                return self._torchrun(argv[0], rest, argv)
            if kind == "-c":
                return self._stand_in("twin.fakepython", "--interpreter", argv[0], "-c", name, *rest)
            if kind == "script" and Path(name).name in DATA_SCRIPTS:
                return self._stand_in(DATA_SCRIPTS[Path(name).name], "--", *rest)
            if kind == "script" and Path(name).name == HIDDEN_STATES_SCRIPT:
                return self._hidden_states(argv[0], 1, rest)
            return list(argv)
        if program in ("sglang", "vllm") and len(argv) >= 2 and argv[1] == "serve":
            return self._engine(program, "script", argv[2:])
        if program == "specforge":
            return self._stand_in("twin.specforge", "--interpreter", argv[0], "--", *argv[1:])
        if program == "torchrun":
            return self._torchrun(argv[0], argv[1:], argv)
        if program in HOST_COMMANDS:
            return self._stand_in("twin.hostcmd", "--", program, *argv[1:])
        return list(argv)
