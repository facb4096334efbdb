"""render_deployment and launch_deployment: the configuration the agent found, for a cluster manager to run.

The engine's command lines come from the same release-aware builders as a launch here (so the flags are the
installed release's), the node rank and node 0's address from the manager's variables. What was needed for this
engine (``env`` of the launch: NCCL_P2P_DISABLE and the like) goes along; what belongs to the local nodes'
network (their NCCL_SOCKET_IFNAME and NCCL_IB_DISABLE) does not, and the notes say so. SkyPilot is driven through
its own CLI, on the agent's machine, when it is installed and configured; no scheduling is done here.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Literal

from pydantic import Field

from tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolOutput
from tools.deploy import lws, skypilot, yaml_text
from tools.deploy.commands import RankCommands, accelerator_name, rank_commands
from tools.engines.command import FlagError, FlagsUnknown
from tools.engines.config import EngineLaunchConfig
from tools.hosts.local import LocalHost
from tools.logs.diagnose import Diagnosis, diagnose_text
from tools.processes import resolve_process
from tools.redact import redact_text

NETWORK_ONLY = ("NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE")  # chosen for the local nodes' network
IMAGES = {"sglang": "lmsysorg/sglang:v{version}", "vllm": "vllm/vllm-openai:v{version}"}


class RenderDeploymentArgs(ToolArgs):
    target: Literal["skypilot", "lws"] = Field(description="A SkyPilot task YAML, or a Kubernetes LeaderWorkerSet.")
    name: str = Field("opsloop-engine", pattern=r"^[a-z0-9]([-a-z0-9]{0,48}[a-z0-9])?$")
    engine: str | None = Field(None, description="The engine process whose launch to render (default: the newest).")
    config: EngineLaunchConfig | None = Field(None, description="Render this launch configuration instead.")
    engine_version: str | None = Field(None, description="The release to write flags for (default: the launch's).")
    model_path: str | None = Field(None, description="The model as the cluster sees it (hub id or mounted path).")
    accelerators: str | None = Field(None, description="SkyPilot accelerators per node, e.g. H100:8 (default: probe).")
    num_nodes: int | None = Field(None, ge=1, le=64, description="Default: the launch's nnodes.")
    image: str | None = Field(None, description="LWS container image (default: the engine's image of that release).")
    setup: str | None = Field(None, description="SkyPilot setup commands (default: pip install the engine release).")
    initial_delay_seconds: int = Field(600, ge=0, description="Readiness probe delay: large models load for minutes.")
    output_path: str | None = Field(None, description="Where to write it (default: <state>/deployments/).")


class RenderDeploymentOutput(ToolOutput):
    target: str
    path: str
    text: str
    notes: list[str] = Field(default_factory=list)


def _launch(args: RenderDeploymentArgs, context: ToolContext) -> tuple[EngineLaunchConfig, str | None]:
    if args.config is not None:
        return args.config, context.state.environment.packages.get(args.config.engine)
    record = resolve_process(context.state, args.engine, kind="engine")
    fields = EngineLaunchConfig.model_fields
    try:
        recorded = {key: value for key, value in record.config.items() if key in fields}
        config = EngineLaunchConfig.model_validate(recorded)
    except ValueError as error:
        raise ToolError(f"the launch of {record.name} cannot be read back ({error}); pass config instead") from None
    version = record.config.get("engine_version")
    return config, version if isinstance(version, str) else None


def _gpus_per_node(config: EngineLaunchConfig, nodes: int, context: ToolContext) -> tuple[int, str | None]:
    environment = context.state.environment
    cluster = environment.cluster
    if cluster is not None and cluster.nodes and cluster.nodes[0].gpus:
        return cluster.nodes[0].gpus, cluster.nodes[0].gpu_name
    if environment.gpus:
        return len(environment.gpus), environment.gpus[0].name
    return max(config.tp_size * config.dp_size // nodes, 1), None


def _commands(config: EngineLaunchConfig, version: str | None, nodes: int, target: str) -> RankCommands:
    if target == "skypilot":
        rank, head = "$SKYPILOT_NODE_RANK", "${MASTER_ADDR}"
    else:
        rank, head = "$(LWS_WORKER_INDEX)", "$(LWS_LEADER_ADDRESS)"
    try:
        return rank_commands(config, version, nodes, rank_variable=rank, head_variable=head)
    except (FlagError, FlagsUnknown) as error:
        raise ToolError(f"cannot build the engine's command for {config.engine} {version}: {error}") from None


def render(args: RenderDeploymentArgs, context: ToolContext) -> tuple[dict[str, object], list[str]]:
    config, version = _launch(args, context)
    version = args.engine_version or version
    if args.model_path:
        config = config.model_copy(update={"model_path": args.model_path})
    nodes = args.num_nodes or config.nnodes
    per_node, gpu_name = _gpus_per_node(config, nodes, context)
    commands = _commands(config, version, nodes, args.target)
    env = {key: value for key, value in commands.env.items() if key not in NETWORK_ONLY}
    notes = [f"the model path {config.model_path} must exist on every node (or give model_path: a hub id)"]
    dropped = sorted(set(commands.env) - set(env))
    if dropped:
        notes.append(f"{', '.join(dropped)} left out: chosen for the local nodes' network, not the cluster's")
    port = config.effective_port
    if args.target == "lws":
        image = args.image or IMAGES[config.engine].format(version=version or "latest")
        document = lws.manifest(args.name, commands, nodes=nodes, gpus_per_node=per_node, image=image, port=port,
                                env=env, initial_delay_seconds=args.initial_delay_seconds)  # fmt: skip
        return document, notes
    known = accelerator_name(gpu_name or "")
    accelerator = args.accelerators or (f"{known}:{per_node}" if known else None)
    if accelerator is None:
        raise ToolError(f"no SkyPilot accelerator name known for {gpu_name!r}; pass accelerators, e.g. H100:8")
    pinned = f"=={version}" if version else ""
    setup = args.setup or f'pip install "{config.engine}{pinned}"'
    document = skypilot.task(args.name, commands, nodes=nodes, accelerators=accelerator, port=port, setup=setup,
                             env=env, initial_delay_seconds=args.initial_delay_seconds)  # fmt: skip
    return document, notes


class RenderDeploymentTool(Tool[RenderDeploymentArgs, RenderDeploymentOutput]):
    name = "render_deployment"
    description = (
        "Write the configuration that works here for a cluster manager: target 'skypilot' writes a SkyPilot task "
        "YAML (num_nodes, accelerators, setup, a run section mapping SKYPILOT_NODE_RANK/SKYPILOT_NODE_IPS onto the "
        "engine's multi-node flags, the readiness probe, the environment fixes); target 'lws' a Kubernetes "
        "LeaderWorkerSet manifest. Takes the newest engine's launch unless given another."
    )
    args_model = RenderDeploymentArgs
    output_model = RenderDeploymentOutput

    def run(self, args: RenderDeploymentArgs, context: ToolContext) -> RenderDeploymentOutput:
        document, notes = render(args, context)
        text = yaml_text.dump(document)
        suffix = "sky.yaml" if args.target == "skypilot" else "lws.yaml"
        default = context.state_dir / "deployments" / f"{args.name}.{suffix}"
        path = Path(args.output_path).expanduser() if args.output_path else default
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return RenderDeploymentOutput(target=args.target, path=str(path), text=redact_text(text), notes=notes)


class LaunchDeploymentArgs(ToolArgs):
    action: Literal["launch", "status", "logs", "down"] = "status"
    cluster: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,48}[a-z0-9])?$", description="The SkyPilot cluster name.")
    path: str | None = Field(None, description="launch: the task YAML render_deployment wrote.")
    timeout_seconds: float = Field(1800.0, gt=0, le=4 * 3600)


class LaunchDeploymentOutput(ToolOutput):
    command: list[str]
    exit_code: int | None
    output: str
    diagnosis: Diagnosis | None = None


class LaunchDeploymentTool(Tool[LaunchDeploymentArgs, LaunchDeploymentOutput]):
    name = "launch_deployment"
    description = (
        "Drive SkyPilot on the agent's machine (it must be installed and configured: `sky check`): launch a task "
        "YAML from render_deployment as a cluster, show its status, read its logs (diagnosed like an engine log), "
        "or take it down."
    )
    args_model = LaunchDeploymentArgs
    output_model = LaunchDeploymentOutput

    def timeout_for(self, args: LaunchDeploymentArgs) -> float:
        return args.timeout_seconds + 60

    def run(self, args: LaunchDeploymentArgs, context: ToolContext) -> LaunchDeploymentOutput:
        sky = shutil.which("sky")
        if sky is None:
            raise ToolError("SkyPilot is not installed on the agent's machine: pip install skypilot, then sky check")
        argv = {
            "launch": [sky, "launch", "-y", "--detach-run", "-c", args.cluster, str(args.path)],
            "status": [sky, "status", args.cluster],
            "logs": [sky, "logs", "--no-follow", args.cluster],
            "down": [sky, "down", "-y", args.cluster],
        }[args.action]
        if args.action == "launch" and not (args.path and Path(args.path).is_file()):
            raise ToolError("launch needs path: the task YAML written by render_deployment")
        result = LocalHost().run(argv, timeout=args.timeout_seconds)
        text = redact_text(result.stdout + result.stderr)
        diagnosis = diagnose_text(text) if args.action == "logs" and text.strip() else None
        if result.exit_code != 0 and re.search(r"sky check|No cloud|not enabled", text):
            raise ToolError(f"SkyPilot is installed but not configured for any cloud: run `sky check`. {text[-500:]}")
        output = text[-20000:]
        return LaunchDeploymentOutput(command=argv, exit_code=result.exit_code, output=output, diagnosis=diagnosis)
