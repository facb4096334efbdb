"""What SpecForge needs before ``specforge train`` can run, checked before the drafter pipeline starts.

From the SpecForge 0.2.0 release (``specforge/config/schema.py``, ``cli.py``, ``launch_plan.py``,
``pyproject.toml``):

- its own environment: it pins ``torch==2.11.0`` and ``sglang==0.5.14``, so it is run from a separate
  interpreter (``specforge_python``) rather than the engine's;
- online training (``data.train_data_path``) requires ``deployment.mode: disaggregated`` with the
  ``mooncake`` backend ("colocated online training is no longer supported");
- Mooncake master and metadata services, which SpecForge starts itself only for a
  ``deployment.disaggregated.managed_local`` section; otherwise they must already answer;
- capture servers: SGLang started with ``--enable-spec-capture`` and ``--chunked-prefill-size -1`` (a
  SpecForge-patched SGLang; no published SGLang release has the flag), unless ``managed_local`` starts them;
- offline training (``data.hidden_states_path``) needs none of the services: hidden states are first
  generated from the target with ``scripts/prepare_hidden_states.py`` from a SpecForge checkout.
"""

from __future__ import annotations

import shlex
import socket
from typing import Any, Literal

from pydantic import BaseModel, Field

from tools.base import ToolContext
from tools.drafter.plan import TrainDrafterArgs
from tools.processes import live_processes

CheckName = Literal["specforge_environment", "deployment_mode", "mooncake", "capture_server"]
REFUSED = "SpecForge training cannot start"  # how a refusal begins (the runbook recognises it)
MOONCAKE_MASTER = "127.0.0.1:35551"
MOONCAKE_METADATA = "http://127.0.0.1:35880/metadata"


class PrerequisiteCheck(BaseModel):
    name: CheckName
    ok: bool
    detail: str


class PrerequisiteReport(BaseModel):
    route: Literal["online", "offline"]
    checks: list[PrerequisiteCheck] = Field(default_factory=list)
    offline_route: list[str] = Field(default_factory=list, description="Commands for the offline route")

    @property
    def missing(self) -> list[PrerequisiteCheck]:
        return [check for check in self.checks if not check.ok]

    def describe(self) -> str:
        lines = [
            f"{REFUSED} ({self.route}); missing: "
            + "; ".join(f"{check.name}: {check.detail}" for check in self.missing)
        ]
        if self.offline_route:
            lines.append(
                "Offline route (hidden states from the target first, then training; no capture server "
                "or Mooncake needed): " + " && ".join(self.offline_route)
            )
        return "\n".join(lines)


def _disaggregated(args: TrainDrafterArgs) -> dict[str, Any]:
    deployment = args.extra_config.get("deployment") or {}
    section = deployment.get("disaggregated") if isinstance(deployment, dict) else None
    return section if isinstance(section, dict) else {}


def _answers(address: str) -> bool:
    host, _, port = address.removeprefix("http://").split("/", 1)[0].rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=1.0):
            return True
    except (OSError, ValueError):
        return False


def _environment(args: TrainDrafterArgs, context: ToolContext) -> PrerequisiteCheck:
    python = args.specforge_python or context.settings.engine_python
    result = context.host.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('specforge'))"], timeout=60
    )
    if result.exit_code != 0:
        return PrerequisiteCheck(
            name="specforge_environment", ok=False, detail=f"specforge is not installed for {python}"
        )
    version = result.stdout.strip()
    if not args.specforge_python or args.specforge_python == context.settings.engine_python:
        return PrerequisiteCheck(
            name="specforge_environment",
            ok=False,
            detail=(
                f"specforge {version} would run in the engine environment; it pins torch and sglang (0.2.0: "
                "torch==2.11.0, sglang==0.5.14), so give specforge_python of its own environment"
            ),
        )
    return PrerequisiteCheck(name="specforge_environment", ok=True, detail=f"specforge {version} in {python}")


def _capture(args: TrainDrafterArgs, context: ToolContext, target: str | None) -> PrerequisiteCheck:
    if _disaggregated(args).get("managed_local") is not None:
        return PrerequisiteCheck(name="capture_server", ok=True, detail="managed_local: SpecForge starts them")
    if args.capture_server_urls:
        return PrerequisiteCheck(
            name="capture_server", ok=True, detail=f"given: {', '.join(args.capture_server_urls)} (not verified)"
        )
    port = target.rpartition(":")[2] if target else ""
    for record in live_processes(context.state, kind="engine"):
        if str(record.port) == port:
            argv = record.argv
            capture = "--enable-spec-capture" in argv
            whole = "--chunked-prefill-size" in argv and argv[argv.index("--chunked-prefill-size") + 1] == "-1"
            if capture and whole:
                return PrerequisiteCheck(name="capture_server", ok=True, detail=f"engine {record.name} captures")
            return PrerequisiteCheck(
                name="capture_server",
                ok=False,
                detail=(
                    f"engine {record.name} on port {port} was not started with --enable-spec-capture and "
                    "--chunked-prefill-size -1 (needs SpecForge's patched SGLang)"
                ),
            )
    return PrerequisiteCheck(
        name="capture_server",
        ok=False,
        detail=(
            f"no capture-enabled SGLang known at {target or '(none)'}; start one with SpecForge's patched SGLang "
            "(--enable-spec-capture --chunked-prefill-size -1), pass capture_server_urls, or add a "
            "managed_local section"
        ),
    )


def _mooncake(args: TrainDrafterArgs) -> PrerequisiteCheck:
    section = _disaggregated(args)
    if section.get("managed_local") is not None:
        return PrerequisiteCheck(name="mooncake", ok=True, detail="managed_local: SpecForge starts Mooncake")
    master = str(section.get("mooncake_master_server_addr") or MOONCAKE_MASTER)
    metadata = str(section.get("mooncake_metadata_server") or MOONCAKE_METADATA)
    silent = [address for address in (master, metadata) if not _answers(address)]
    if silent:
        return PrerequisiteCheck(
            name="mooncake",
            ok=False,
            detail=(
                f"Mooncake master/metadata not answering at {', '.join(silent)}; SpecForge starts them only with a "
                "deployment.disaggregated.managed_local section"
            ),
        )
    return PrerequisiteCheck(name="mooncake", ok=True, detail=f"master {master} and metadata {metadata} answer")


def offline_commands(args: TrainDrafterArgs, train_data: str, output_dir: str) -> list[str]:
    script = f"{args.specforge_dir or '<specforge checkout>'}/scripts/prepare_hidden_states.py"
    prepare = [
        "torchrun",
        f"--nproc_per_node={args.tp_size}",
        script,
        "--target-model-path",
        args.target_model_path,
        "--draft-model-config",
        args.draft_model_config or "<draft config>",
        "--data-path",
        train_data,
        "--output-path",
        f"{output_dir}/hidden-states",
        "--max-length",
        str(args.max_length),
        "--tp-size",
        str(args.tp_size),
        "--batch-size",
        "1",
    ]
    if args.chat_template:
        prepare += ["--chat-template", args.chat_template]
    return [
        shlex.join(prepare) + "  (flags as in SpecForge's data-preparation docs; they differ between "
        "checkout revisions, so check the script's --help)",
        f"train_drafter with hidden_states_path={output_dir}/hidden-states, "
        "stages [train, export], deployment_mode local_colocated (stop the serving engine first: the "
        "preparation loads the target on the GPUs)",
    ]


def check_prerequisites(
    args: TrainDrafterArgs, context: ToolContext, target: str | None, train_data: str, output_dir: str
) -> PrerequisiteReport:
    """Every prerequisite of the chosen route, each with what was found."""
    offline = bool(args.hidden_states_path)
    report = PrerequisiteReport(route="offline" if offline else "online")
    report.checks.append(_environment(args, context))
    if offline:
        return report
    mode_ok = args.deployment_mode == "disaggregated"
    report.checks.append(
        PrerequisiteCheck(
            name="deployment_mode",
            ok=mode_ok,
            detail=(
                "disaggregated"
                if mode_ok
                else "online training (train_data_path) requires deployment.mode "
                "disaggregated; local_colocated fails SpecForge's config validation"
            ),
        )
    )
    report.checks += [_mooncake(args), _capture(args, context, target)]
    if report.missing:
        report.offline_route = offline_commands(args, train_data, output_dir)
    return report
