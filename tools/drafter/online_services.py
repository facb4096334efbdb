"""What SpecForge 0.2.0's online training needs besides itself (``specforge/config/schema.py``,
``launch_plan.py``):

- ``deployment.mode: disaggregated`` with the ``mooncake`` backend ("colocated online training is no longer
  supported");
- Mooncake master and metadata services, which SpecForge starts itself only for a
  ``deployment.disaggregated.managed_local`` section; otherwise they must already answer;
- capture servers: SGLang started with ``--enable-spec-capture`` and ``--chunked-prefill-size -1`` (a
  SpecForge-patched SGLang; no published SGLang release has the flag), unless ``managed_local`` starts them.
"""

from __future__ import annotations

import socket
from typing import Any

from tools.base import ToolContext
from tools.drafter.arguments import TrainDrafterArgs
from tools.drafter.report import PrerequisiteCheck
from tools.processes import live_processes

MOONCAKE_MASTER = "127.0.0.1:35551"
MOONCAKE_METADATA = "http://127.0.0.1:35880/metadata"


def disaggregated_section(args: TrainDrafterArgs) -> dict[str, Any]:
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


def deployment_mode(args: TrainDrafterArgs) -> PrerequisiteCheck:
    ok = args.deployment_mode == "disaggregated"
    detail = (
        "disaggregated"
        if ok
        else "online training (train_data_path) requires deployment.mode disaggregated; local_colocated fails "
        "SpecForge's config validation"
    )
    return PrerequisiteCheck(name="deployment_mode", ok=ok, detail=detail)


def capture_server(args: TrainDrafterArgs, context: ToolContext, target: str | None) -> PrerequisiteCheck:
    if disaggregated_section(args).get("managed_local") is not None:
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
                absent=True,
                detail=(
                    f"engine {record.name} on port {port} was not started with --enable-spec-capture and "
                    "--chunked-prefill-size -1 (needs SpecForge's patched SGLang)"
                ),
            )
    return PrerequisiteCheck(
        name="capture_server",
        ok=False,
        absent=True,
        detail=(
            f"no capture-enabled SGLang known at {target or '(none)'}; start one with SpecForge's patched SGLang "
            "(--enable-spec-capture --chunked-prefill-size -1), pass capture_server_urls, or add a "
            "managed_local section"
        ),
    )


def mooncake(args: TrainDrafterArgs) -> PrerequisiteCheck:
    section = disaggregated_section(args)
    if section.get("managed_local") is not None:
        return PrerequisiteCheck(name="mooncake", ok=True, detail="managed_local: SpecForge starts Mooncake")
    master = str(section.get("mooncake_master_server_addr") or MOONCAKE_MASTER)
    metadata = str(section.get("mooncake_metadata_server") or MOONCAKE_METADATA)
    silent = [address for address in (master, metadata) if not _answers(address)]
    if silent:
        return PrerequisiteCheck(
            name="mooncake",
            ok=False,
            absent=True,
            detail=(
                f"Mooncake master/metadata not answering at {', '.join(silent)}; SpecForge starts them only with a "
                "deployment.disaggregated.managed_local section"
            ),
        )
    return PrerequisiteCheck(name="mooncake", ok=True, detail=f"master {master} and metadata {metadata} answer")
