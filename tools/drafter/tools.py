"""train_drafter and drafter_status: the EAGLE-3 pipeline as one managed background process.

``train_drafter`` writes the run config and a plan (each stage's command translated by the host, so
the simulated host can swap in its SpecForge stand-ins), then starts :mod:`tools.drafter.runner`
detached. Training takes hours on real hardware, so by default it returns at once with the path the
drafter will be exported to; ``drafter_status`` (or ``wait: true``) reads progress into the state.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolOutput
from tools.drafter import runner as drafter_runner
from tools.drafter.plan import DrafterPlan, PlannedStage, TrainDrafterArgs, run_config, stage_commands, to_yaml
from tools.drafter.prerequisites import check_prerequisites
from tools.drafter.progress import DrafterProgress, read_progress
from tools.processes import live_processes, refresh, resolve_process, start_process
from tools.records import ProcessRecord

KIND = "drafter_training"


class DrafterOutput(ToolOutput):
    name: str
    state: str
    pid: int
    log_path: str
    config_path: str
    exported_path: str | None = Field(description="For --speculative-draft-model-path once state is 'done'")
    export_dir: str | None = Field(default=None, description="Where the drafter will be exported")
    progress: DrafterProgress


def _target_server(args: TrainDrafterArgs, context: ToolContext) -> str | None:
    if args.target_server:
        return args.target_server.removeprefix("http://").rstrip("/")
    engines = [record for record in live_processes(context.state, kind="engine") if record.port]
    return f"127.0.0.1:{engines[-1].port}" if engines else None


def build_plan(args: TrainDrafterArgs, context: ToolContext) -> DrafterPlan:
    output_dir = Path(args.output_dir or context.state_dir / "drafters" / args.name).expanduser().resolve()
    output_dir.mkdir(parents=True, exist_ok=True)
    target = _target_server(args, context)
    if "regenerate" in args.stages and target is None:
        raise ToolError(
            "regenerate needs the running target server: start it with launch_engine or pass target_server (host:port)"
        )
    regenerated = output_dir / "regenerated.jsonl"
    train_data = str(regenerated) if "regenerate" in args.stages else str(args.train_data_path)
    run_id = args.name
    checkpoint = output_dir / f"{run_id}-latest"
    export_dir = output_dir / "export-sglang"
    config_path = output_dir / "run.yaml"
    capture_urls = args.capture_server_urls or ([f"http://{target}"] if target else [])
    if "train" in args.stages:
        report = check_prerequisites(args, context, target, train_data, str(output_dir))
        if report.missing:
            raise ToolError(report.describe())
        context.progress(
            f"SpecForge {report.route} prerequisites: "
            + "; ".join(f"{check.name}: {check.detail}" for check in report.checks)
        )
    config = run_config(args, run_id=run_id, output_dir=output_dir, train_data=train_data, capture_urls=capture_urls)
    config_path.write_text(to_yaml(config), encoding="utf-8")
    python = args.specforge_python or context.settings.engine_python
    commands = stage_commands(
        args,
        python=python,
        output_dir=output_dir,
        config_path=config_path,
        regenerated=regenerated,
        target_server=target,
        checkpoint=checkpoint,
        export_dir=export_dir,
    )
    stages = [
        PlannedStage(
            name=stage,
            argv=commands[stage][0],
            host_argv=context.host.translate(commands[stage][0]),
            cwd=commands[stage][1],
        )
        for stage in args.stages
    ]
    return DrafterPlan(
        run_id=run_id,
        output_dir=str(output_dir),
        config_path=str(config_path),
        status_path=str(output_dir / "opsloop-status.json"),
        train_data_path=train_data,
        checkpoint_path=str(checkpoint),
        export_dir=str(export_dir) if "export" in args.stages else None,
        env=dict(args.env),
        stages=stages,
    )


def observe(record: ProcessRecord, context: ToolContext) -> DrafterProgress:
    """Refresh the record from the host, the status file and the log; note the outcome once."""
    alive = refresh(record, context.host).alive
    config = record.config
    regenerated = Path(config["output_dir"]) / "regenerated.jsonl" if config.get("regenerates") else None
    progress = read_progress(Path(record.log_path), Path(config["status_path"]), regenerated)
    if not alive and progress.state in ("running", "starting"):
        progress.state = "stopped" if record.state == "stopped" else "failed"
        progress.error = progress.error or f"the pipeline process ended (exit code {record.exit_code})"
    config["progress"] = progress.model_dump(exclude={"recent_lines"})
    if (not alive or progress.state in ("done", "failed")) and not config.get("outcome_noted"):
        config["outcome_noted"] = True
        _note_outcome(record, progress, context)
    return progress


def _note_outcome(record: ProcessRecord, progress: DrafterProgress, context: ToolContext) -> None:
    if progress.state == "done":
        where = record.config.get("export_dir")
        quality = (
            f"; last eval simulated_acc_len {progress.simulated_acc_len:.3f} (about "
            f"{progress.accept_length_estimate:.3f} SGLang accept length)"
            if progress.simulated_acc_len is not None and progress.accept_length_estimate is not None
            else ""
        )
        done = f"exported to {where}" if where else "finished"
        context.state.add_finding(f"drafter {record.name} {done} after step {progress.step}{quality}")
    else:
        context.state.add_finding(
            f"drafter {record.name} {progress.state} in stage {progress.stage}: {progress.error}",
            evidence=progress.recent_lines[-5:],
        )


def _output(record: ProcessRecord, progress: DrafterProgress) -> DrafterOutput:
    exported = record.config.get("export_dir") if progress.state == "done" else None
    return DrafterOutput(
        name=record.name,
        state=progress.state,
        pid=record.pid,
        log_path=record.log_path,
        config_path=str(record.config.get("config_path")),
        exported_path=exported,
        export_dir=record.config.get("export_dir"),
        progress=progress,
    )


class TrainDrafterTool(Tool[TrainDrafterArgs, DrafterOutput]):
    name = "train_drafter"
    blocks = (
        "a few seconds to start the pipeline; with wait=true until it ends, at most wait_timeout_seconds "
        "(default 3600)."
    )
    description = (
        "Train an EAGLE-3 drafter with SpecForge as a background pipeline: regenerate the training "
        "data with the running target server, `specforge train` from a generated run config, then "
        "`specforge export --to sglang`. Before training it checks SpecForge's prerequisites (its own "
        "environment via specforge_python; for online training a capture-enabled SGLang and Mooncake "
        "services or a managed_local section, deployment_mode disaggregated) and refuses with what is "
        "missing and the offline route (hidden_states_path). Returns at once (use drafter_status) unless "
        "wait=true; the exported directory is what --speculative-draft-model-path takes."
    )
    args_model = TrainDrafterArgs
    output_model = DrafterOutput

    def timeout_for(self, args: TrainDrafterArgs) -> float:
        return (args.wait_timeout_seconds if args.wait else 60.0) + 120.0

    def run(self, args: TrainDrafterArgs, context: ToolContext) -> DrafterOutput:
        for record in live_processes(context.state, kind=KIND):
            if record.name == args.name and refresh(record, context.host).alive:
                raise ToolError(
                    f"drafter run {args.name!r} is still running (pid {record.pid}); check it with "
                    "drafter_status or choose another name"
                )
        plan = build_plan(args, context)
        plan_path = Path(plan.output_dir) / "opsloop-plan.json"
        plan_path.write_text(plan.model_dump_json(indent=2), encoding="utf-8")
        Path(plan.status_path).unlink(missing_ok=True)
        summary: dict[str, Any] = {
            "output_dir": plan.output_dir,
            "config_path": plan.config_path,
            "status_path": plan.status_path,
            "plan_path": str(plan_path),
            "export_dir": plan.export_dir,
            "stages": list(args.stages),
            "regenerates": "regenerate" in args.stages,
            "target_model_path": args.target_model_path,
        }
        runner = [sys.executable, str(Path(drafter_runner.__file__).resolve()), str(plan_path)]
        record = start_process(
            context,
            name=args.name,
            argv=runner,
            env=dict(args.env),
            kind=KIND,
            config=summary,
            cwd=Path(plan.output_dir),
        )
        context.progress(f"{args.name}: drafter pipeline started (pid {record.pid}); log {record.log_path}")
        progress = observe(record, context)
        deadline = time.monotonic() + args.wait_timeout_seconds
        while args.wait and progress.state in ("starting", "running") and time.monotonic() < deadline:
            time.sleep(args.poll_seconds)
            progress = observe(record, context)
            context.checkpoint()
            context.progress(f"{args.name}: stage {progress.stage}, step {progress.step}, loss {progress.loss}")
        return _output(record, progress)


class DrafterStatusArgs(ToolArgs):
    name: str | None = Field(default=None, description="Drafter run name (default: the latest)")


class DrafterStatusTool(Tool[DrafterStatusArgs, DrafterOutput]):
    name = "drafter_status"
    description = (
        "Progress of a train_drafter run: stage, step, loss, per-position accuracy, simulated "
        "acceptance length (+1 = comparable with SGLang accept length), and the exported drafter "
        "path once done."
    )
    args_model = DrafterStatusArgs
    output_model = DrafterOutput
    timeout_seconds = 60.0

    def run(self, args: DrafterStatusArgs, context: ToolContext) -> DrafterOutput:
        record = resolve_process(context.state, args.name, kind=KIND)
        progress = observe(record, context)
        context.checkpoint()
        return _output(record, progress)
