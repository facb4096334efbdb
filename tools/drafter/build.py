"""From ``train_drafter``'s arguments to a checked plan: the target server, the paths, the prerequisites, the
run config and each stage's command (translated by the host, so the simulated host can swap in its
stand-ins)."""

from __future__ import annotations

from pathlib import Path

from tools.base import ToolContext, ToolError
from tools.drafter.arguments import TrainDrafterArgs
from tools.drafter.plan import DrafterPlan, PlannedStage, PlanStage, RunPaths, run_config, stage_commands
from tools.drafter.prerequisites import check_prerequisites
from tools.drafter.report import PrerequisiteReport
from tools.drafter.yaml_text import to_yaml
from tools.private_files import write_private
from tools.processes import live_processes

SPECFORGE_STAGES = ("prepare_hidden_states", "train", "export")


def target_server(args: TrainDrafterArgs, context: ToolContext) -> str | None:
    if args.target_server:
        return args.target_server.removeprefix("http://").rstrip("/")
    engines = [record for record in live_processes(context.state, kind="engine") if record.port]
    return f"127.0.0.1:{engines[-1].port}" if engines else None


def run_paths(args: TrainDrafterArgs, context: ToolContext) -> RunPaths:
    output_dir = Path(args.output_dir or context.state_dir / "drafters" / args.name).expanduser().resolve()
    regenerated = output_dir / "regenerated.jsonl"
    train_data = str(regenerated) if "regenerate" in args.stages else str(args.train_data_path)
    features = args.hidden_states_path or (
        str(output_dir / "hidden-states") if "prepare_hidden_states" in args.stages else None
    )
    held_out = "prepare_hidden_states" in args.stages and args.eval_fraction > 0
    return RunPaths(
        run_id=args.name,
        output_dir=output_dir,
        train_data=train_data,
        features=features,
        eval_features=str(output_dir / "hidden-states-eval") if held_out else None,
    )


def checked(args: TrainDrafterArgs, context: ToolContext) -> tuple[RunPaths, str | None, PrerequisiteReport | None]:
    """The run's paths, the target server, and the prerequisite report (None when no SpecForge stage runs)."""
    paths, target = run_paths(args, context), target_server(args, context)
    if "regenerate" in args.stages and target is None:
        raise ToolError(
            "regenerate needs the running target server: start it with launch_engine or pass target_server (host:port)"
        )
    if not any(stage in args.stages for stage in SPECFORGE_STAGES):
        return paths, target, None
    return paths, target, check_prerequisites(args, context, target, paths.train_data, str(paths.output_dir))


def build_plan(
    args: TrainDrafterArgs,
    context: ToolContext,
    paths: RunPaths,
    target: str | None,
    report: PrerequisiteReport | None,
    write: bool = True,
) -> DrafterPlan:
    """Lay out the stages and (``write``) write the run config; nothing starts."""
    capture_urls = args.capture_server_urls or ([f"http://{target}"] if target else [])
    if write:
        paths.output_dir.mkdir(parents=True, exist_ok=True)
        write_private(paths.config, to_yaml(run_config(args, paths, capture_urls)).encode("utf-8"))
    python = report.specforge_python if report and report.specforge_python else context.settings.engine_python
    prepare = report.prepare if report else None
    commands = stage_commands(args, python, paths, target, prepare)
    names: list[PlanStage] = []
    for stage in args.stages:
        names.append(stage)
        if stage == "prepare_hidden_states" and "split_eval" in commands:
            names.append("split_eval")
    stages = [
        PlannedStage(name=name, argv=commands[name][0], host_argv=context.host.translate(commands[name][0]), cwd=cwd)
        for name in names
        for cwd in [commands[name][1]]
    ]
    return DrafterPlan(
        run_id=paths.run_id,
        output_dir=str(paths.output_dir),
        config_path=str(paths.config),
        status_path=str(paths.output_dir / "opsloop-status.json"),
        train_data_path=paths.train_data,
        features_dir=paths.features,
        eval_features_dir=paths.eval_features,
        checkpoint_path=str(paths.checkpoint),
        export_dir=str(paths.export_dir) if "export" in args.stages else None,
        env=dict(args.env),
        stages=stages,
        choices=prepare.choices if prepare else [],
    )
