"""From probe results to a first launch configuration, or a question when the goal cannot be met here."""

from __future__ import annotations

from agent.actions import Ask
from agent.policies.runbook.cpu_plan import CpuPlanRefused, plan_cpu
from agent.policies.runbook.goal import GoalSpec, parse_goal, pick_drafter, pick_target
from agent.policies.runbook.progress import RunbookProgress
from agent.policies.runbook.settings import RunbookSettings
from agent.state import ProjectState
from tools.cluster.preflight import CheckNodesOutput
from tools.engines.config import DEFAULT_PORTS
from tools.records import ModelInfo


def _ask(progress: RunbookProgress, kind: str, question: str, evidence: list[str], hypothesis: str) -> Ask:
    progress.blocked_on = kind
    return Ask(
        question=question,
        evidence=evidence,
        hypothesis=hypothesis,
        question_kind=kind,
        options=["retry after fixing it", "KEY=VALUE settings to apply", "stop here"],
    )


def nodes_checked(progress: RunbookProgress, output: CheckNodesOutput) -> Ask | None:
    """After check_nodes: plan across the nodes, or ask a person to fix what would make the launch hang."""
    if output.ready:
        progress.phase = "plan"
        return None
    cluster = output.cluster
    return _ask(
        progress,
        "nodes",
        "The nodes cannot run one engine together yet: "
        + "; ".join(cluster.problems[:2])
        + ". Can you fix this (network, firewall, SSH), or should I use fewer hosts?",
        cluster.problems + cluster.warnings,
        "a node is unreachable, or a firewall or routing problem between the nodes; only a person can change it",
    )


def _gpu_count(state: ProjectState) -> tuple[int, float]:
    """GPUs and their total memory (GiB) across every node of the run."""
    cluster = state.environment.cluster
    if cluster is not None and len(cluster.nodes) > 1:
        return sum(node.gpus for node in cluster.nodes), sum(
            node.gpus * node.gpu_memory_mib for node in cluster.nodes
        ) / 1024
    gpus = state.environment.gpus
    return len(gpus), sum(gpu.memory_total_mib for gpu in gpus) / 1024


def _multi_node(state: ProjectState, progress: RunbookProgress) -> str:
    """Spread the launch over the run's nodes (check_nodes chose the init address and NCCL settings)."""
    cluster = state.environment.cluster
    if cluster is None or len(cluster.nodes) < 2 or cluster.init_address is None:
        return ""
    progress.base_config.update({"nnodes": len(cluster.nodes), "dist_init_addr": cluster.init_address})
    progress.node_env = dict(cluster.node_env)
    interfaces = ", ".join(f"{node.host}: {node.interface}" for node in cluster.nodes)
    return f" across {len(cluster.nodes)} nodes (init {cluster.init_address}; NCCL_SOCKET_IFNAME {interfaces})"


def plan(state: ProjectState, progress: RunbookProgress, settings: RunbookSettings | None = None) -> Ask | None:
    """Check that the goal can be met on this host and write the baseline config; None when ready to launch."""
    environment, goal = state.environment, parse_goal(state.goal)
    if not environment.gpus:
        return _plan_without_gpu(state, progress, settings or RunbookSettings())
    faulty = [
        f"GPU {gpu.index} {gpu.name}: Xid {', '.join(gpu.xid_errors) or 'none'}, uncorrected ECC "
        f"{gpu.ecc_errors_uncorrected or 0}"
        for gpu in environment.gpus
        if gpu.xid_errors or (gpu.ecc_errors_uncorrected or 0) > 0
    ]
    if faulty and "hardware" not in progress.acknowledged:
        return _ask(
            progress,
            "hardware",
            "A GPU reports hardware errors. Retrying on it could corrupt results or "
            "hang the box. Should I proceed anyway, or will you service the GPU first?",
            faulty,
            "a failing GPU; it needs a reset, reboot or replacement before serving",
        )
    target = pick_target(goal, environment.models)
    found = [f"{model.name} ({model.role}) at {model.path}" for model in environment.models]
    if target is None or not target.path:
        return _ask(
            progress,
            "infeasible",
            "I could not tell which model to serve. Which directory holds it?",
            found or ["no model directories found by the probe"],
            "the model is not on this host",
        )
    gpu_count, total_gib = _gpu_count(state)
    if target.size_gib and target.size_gib > 0.95 * total_gib:
        return _ask(
            progress,
            "infeasible",
            f"{target.name} needs about {target.size_gib:.0f} GiB for weights "
            f"alone but the GPUs hold {total_gib:.0f} GiB in total. Use a smaller quantisation or "
            "more GPUs?",
            [f"model size {target.size_gib} GiB", f"{gpu_count} GPUs"],
            "the model does not fit on this host",
        )
    installed = {name for name, version in environment.packages.items() if version}
    engine = goal.engine or ("sglang" if "sglang" in installed else "vllm" if "vllm" in installed else None)
    if engine is None or engine not in installed:
        return _ask(
            progress,
            "infeasible",
            f"No {engine or 'inference engine'} is installed in the engine "
            "environment. Which environment should I use (--engine-python)?",
            [f"packages: {environment.packages}"],
            "the engine environment is not set up",
        )
    progress.engine, progress.speculative_wanted = engine, goal.speculative
    progress.gpu_count = len(environment.gpus)
    progress.target_path, progress.served_model = target.path, target.name
    progress.base_config = {
        "engine": engine,
        "model_path": target.path,
        "served_model_name": target.name,
        "tp_size": gpu_count,
        "port": DEFAULT_PORTS[engine],
        "trust_remote_code": True,
        "enable_metrics": True,
    }
    across = _multi_node(state, progress)
    drafter = _take_target(state, progress, target, goal, settings or RunbookSettings())
    state.add_finding(
        f"plan: serve {target.name} with {engine} on {gpu_count} GPUs (TP {gpu_count}){across}"
        + (f"; try drafter {drafter.name}" if drafter else "")
    )
    return None


def _take_target(
    state: ProjectState, progress: RunbookProgress, target: ModelInfo, goal: GoalSpec, settings: RunbookSettings
) -> ModelInfo | None:
    """The plan's common end: the operator's launch settings, the target, the off-the-shelf drafter when
    speculation is wanted, the tasks."""
    progress.base_config.update(settings.launch_settings)
    drafter = pick_drafter(target, state.environment.models) if goal.speculative else None
    progress.speculative_wanted = goal.speculative
    progress.offshelf_drafter = drafter.path if drafter else None
    state.model = target.model_copy()
    _write_tasks(state, progress)
    progress.phase, progress.purpose = "launch", "baseline"
    return drafter


def _plan_without_gpu(state: ProjectState, progress: RunbookProgress, settings: RunbookSettings) -> Ask | None:
    """A CPU deployment when the engine and the memory allow one (cpu_plan.py); else the question of a host
    without a GPU, with the reason."""
    environment, goal = state.environment, parse_goal(state.goal)
    target = pick_target(goal, environment.models)
    why = "no model directory found for the goal" if target is None or not target.path else ""
    if target is not None and target.path and goal.engine not in (None, "vllm"):
        why = f"the goal asks for {goal.engine}, which has no CPU build"
    if not why and target is not None:
        try:
            plan_cpu(state, progress, target, settings)
        except CpuPlanRefused as refused:
            why = str(refused)
    if why or target is None:
        return _ask(
            progress,
            "infeasible",
            "No NVIDIA GPU is usable on this host, and I cannot serve the model on its CPU. Which host should I "
            "use, or can the driver be fixed?",
            [environment.gpu_probe_error or "probe found no GPUs", f"no CPU deployment: {why}"],
            "no driver or no GPU on this machine",
        )
    progress.engine = "vllm"
    progress.target_path, progress.served_model = target.path, target.name
    drafter = _take_target(state, progress, target, goal, settings)
    if drafter is not None:
        state.add_finding(f"plan: then try the drafter {drafter.name} ({drafter.path})")
    return None


def _write_tasks(state: ProjectState, progress: RunbookProgress) -> None:
    state.upsert_task("probe", "Probe GPUs, interconnect, drivers and engine versions", status="done")
    state.upsert_task("bring-up", f"Bring up {progress.served_model} on {progress.engine}", status="in_progress")
    state.upsert_task("correctness", "Check answers are sane before trusting any speed")
    state.upsert_task("baseline", "Baseline benchmark: single-stream and peak throughput")
    if progress.speculative_wanted:
        state.upsert_task("speculative", "EAGLE-3: measure the available drafter, train one if it loses")
    state.upsert_task("report", "Report baseline vs final configuration")
    state.next_steps = [
        "launch the engine and watch its log",
        "apply remedies for diagnosed failures",
        "benchmark the working configuration",
    ]
