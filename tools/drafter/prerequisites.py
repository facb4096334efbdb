"""What SpecForge needs before the drafter pipeline can run, checked before anything starts.

From the SpecForge 0.2.0 release and its checkout:

- its own environment (:mod:`tools.drafter.environment`): specforge installed where it runs, with its exact
  pins (``torch==2.11.0``, ``transformers==5.8.1``, ``sglang==0.5.14``) met;
- offline route (``prepare_hidden_states``): the checkout's ``scripts/prepare_hidden_states.py`` runs with
  that interpreter and can prepare EAGLE-3 features (:mod:`tools.drafter.hidden_states`), and the GPUs have
  room for the target (:mod:`tools.drafter.gpu_room`);
- online route (``train`` from ``train_data_path``): a disaggregated deployment, Mooncake and capture servers
  (:mod:`tools.drafter.online_services`).

Each missing check says whether it is *absent* (nothing of it on this host) or set up but failing: a
policy may finish without training in the first case and ask a human in the second.
"""

from __future__ import annotations

from pathlib import Path

from tools.base import ToolContext
from tools.drafter import online_services
from tools.drafter.arguments import TrainDrafterArgs
from tools.drafter.environment import SpecForgeEnvironmentReport, inspect_environment, specforge_python
from tools.drafter.gpu_room import assess, shortfall
from tools.drafter.hidden_states import ScriptUnusable, accepted_flags, build_command, script_path
from tools.drafter.report import PrerequisiteCheck, PrerequisiteReport


def _environment(found: SpecForgeEnvironmentReport, engine_python: str) -> PrerequisiteCheck:
    name, python = "specforge_environment", found.python
    if found.source == "engine" and (found.error or not found.version):
        return PrerequisiteCheck(
            name=name,
            ok=False,
            absent=True,
            detail=(
                "no SpecForge environment on this host: no specforge_python given or set, none found by "
                f"probe_system ($SPECFORGE_DIR/.venv/bin/python), and the engine environment ({engine_python}) has "
                "no specforge"
            ),
        )
    if found.error:
        return PrerequisiteCheck(name=name, ok=False, detail=f"cannot run {python}: {found.error}")
    if not found.version:
        return PrerequisiteCheck(name=name, ok=False, detail=f"specforge is not installed for {python}")
    if found.unmet:
        where = "the engine environment" if found.source == "engine" else python
        return PrerequisiteCheck(
            name=name,
            ok=False,
            detail=(
                f"specforge {found.version} in {where} needs exact versions it does not have: "
                f"{', '.join(found.unmet)}; give SpecForge its own environment (specforge_python)"
            ),
        )
    return PrerequisiteCheck(name=name, ok=True, detail=f"specforge {found.version} in {python} ({found.source})")


def _gpu(args: TrainDrafterArgs, context: ToolContext) -> tuple[str | None, bool]:
    """The GPUs' compute capability, and whether the target uses MLA attention (from the probe)."""
    environment = context.state.environment
    capability = environment.gpus[0].compute_capability if environment.gpus else None
    models = [context.state.model, *environment.models]
    mla = any(model.attention == "mla" for model in models if args.target_model_path in (model.path, model.name))
    return capability or None, mla


def _offline(
    args: TrainDrafterArgs, context: ToolContext, report: PrerequisiteReport, train_data: str, output_dir: str
) -> None:
    """Add the preparation script's check (building its command) and the GPU memory check."""
    python, script = str(report.specforge_python), script_path(str(args.specforge_dir))
    room = assess(args, context)
    output = args.hidden_states_path or str(Path(output_dir) / "hidden-states")
    try:
        flags = accepted_flags(context, python, script)
        report.prepare = build_command(args, python, flags, train_data, output, room, _gpu(args, context))
        report.checks.append(
            PrerequisiteCheck(name="prepare_script", ok=True, detail=f"{script} accepts {len(flags)} flags")
        )
    except ScriptUnusable as error:
        report.checks.append(PrerequisiteCheck(name="prepare_script", ok=False, detail=str(error)))
    short = shortfall(room, args, context)
    free = (
        f"at least {min(room.free_mib.values()) / 1024:.1f} GiB free on each GPU it uses"
        if room.free_mib
        else "GPU memory not known here; not checked"
    )
    report.checks.append(PrerequisiteCheck(name="gpu_memory", ok=short is None, detail=short or free))


def offline_route(train_data: str) -> list[str]:
    return [
        f"train_drafter with stages [prepare_hidden_states, train, export] and train_data_path={train_data} "
        "(scripts/prepare_hidden_states.py of the SpecForge checkout loads the target on the GPUs: stop the serving "
        "engine first unless a dry_run says they have room; dry_run also shows the command for this checkout)"
    ]


def check_prerequisites(
    args: TrainDrafterArgs, context: ToolContext, target: str | None, train_data: str, output_dir: str
) -> PrerequisiteReport:
    """Every prerequisite of the chosen route, each with what was found."""
    python, source = specforge_python(args.specforge_python, context)
    found = inspect_environment(context.host, python, source)
    environment = _environment(found, context.settings.engine_python)
    report = PrerequisiteReport(
        route="offline" if args.offline else "online", specforge_python=python, checks=[environment]
    )
    if "prepare_hidden_states" in args.stages:
        if environment.ok:  # the script's --help runs in that environment
            _offline(args, context, report, train_data, output_dir)
        return report
    if args.offline or "train" not in args.stages:
        return report
    report.checks += [
        online_services.deployment_mode(args),
        online_services.mooncake(args),
        online_services.capture_server(args, context, target),
    ]
    if report.missing:
        report.offline_route = offline_route(train_data)
    return report
