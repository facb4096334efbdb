"""Decide what one launch will do: which failure (if any) comes first, and how it serves otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from twin.engine.failure import Drafter, Failure, MemoryPlan
from twin.engine.launch import LaunchConfig
from twin.engine.memory import plan_memory
from twin.engine.midrun import TimedFailure, clock_faults, launch_faults, oom_kill
from twin.engine.physics import check_attention, check_gpus, check_model, resolve_drafter
from twin.layout import SimLayout
from twin.quality import accept_length, accept_rate
from twin.rules import LaunchFacts
from twin.scenario import GpuFault, Scenario


@dataclass
class Performance:
    single_stream_tok_s: float
    peak_tok_s: float
    ttft_ms: float
    prefill_tok_s: float
    max_running_requests: int


@dataclass
class SpecPlan:
    drafter: Drafter
    steps: int
    draft_tokens: int
    accept_length: float
    accept_rate: float
    speedup: float


@dataclass
class Plan:
    launch: LaunchConfig
    failure: Failure | None
    memory: MemoryPlan
    performance: Performance
    spec: SpecPlan | None = None
    garbled: bool = False
    notes: list[str] = field(default_factory=list)
    load_seconds: float = 0.0
    timed: list[TimedFailure] = field(default_factory=list)  # due by the host's clock while it runs
    strike_at_start: list[int] = field(default_factory=list)  # faults on GPUs it does not use


@dataclass
class HostNow:
    """The host as this launch finds it: its number among engine starts, its clock, the faults in effect."""

    attempt: int = 1
    seconds: float = 0.0
    active: list[tuple[int, GpuFault]] = field(default_factory=list)
    struck: set[int] = field(default_factory=set)


def _earliest(failures: list[Failure]) -> Failure | None:
    if not failures:
        return None
    return min(failures, key=lambda failure: failure.order)


def _rule_failures(scenario: Scenario, facts: LaunchFacts) -> list[Failure]:
    """Matching crash/hang rules up to the first matching serve rule (file order)."""
    found: list[Failure] = []
    for rule in scenario.rules:
        if not rule.when.matches(facts):
            continue
        if rule.outcome == "serve":
            break
        found.append(
            Failure(
                rule.outcome,
                rule.at,
                list(rule.log),
                exit_code=rule.exit_code,
                progress=rule.progress,
                ignore_sigterm=rule.ignore_sigterm,
                source=f"rule {rule.name}",
                after_seconds=rule.after_seconds,
            )
        )
    return found


def _port_failure(launch: LaunchConfig) -> Failure:
    host = launch.parsed.values.get("--host") or "127.0.0.1"
    line = (
        f"{{main_prefix}}ERROR:    [Errno 98] error while attempting to bind on address "
        f"('{host}', {launch.port}): address already in use"
    )
    return Failure("crash", "serving", [line], source="port")


def _spec_plan(drafter: Drafter, launch: LaunchConfig, scenario: Scenario) -> SpecPlan:
    assert launch.speculative is not None
    steps = launch.speculative.steps
    length = accept_length(drafter.per_position, steps)
    speedup = length / (1.0 + steps * scenario.speculative.draft_step_cost)
    rate = accept_rate(drafter.per_position, steps)
    return SpecPlan(drafter, steps, launch.speculative.draft_tokens, length, rate, speedup)


def build_plan(
    scenario: Scenario,
    launch: LaunchConfig,
    env: Mapping[str, str],
    layout: SimLayout,
    others_mib: list[int],
    host: HostNow | None = None,
) -> Plan:
    """Hardware and disk problems are listed before rules, so they win ties; the earliest phase wins."""
    host = host or HostNow(
        active=[(index, fault) for index, fault in enumerate(scenario.host.faults) if not fault.triggered]
    )
    failures: list[Failure] = []
    model_failure = check_model(launch, scenario, layout)
    drafter = resolve_drafter(launch, scenario, layout)
    gpus, gpu_failure = check_gpus(launch, scenario, env, [fault for _, fault in host.active])
    during, strike_at_start = launch_faults(scenario, host.attempt, gpus, host.struck)
    failures += during
    killed = oom_kill(scenario)
    failures += [killed] if killed is not None else []
    memory = plan_memory(launch, scenario, gpus, others_mib)
    attention_failure = check_attention(launch, scenario)
    found = (model_failure, gpu_failure, attention_failure)
    failures += [failure for failure in found if failure is not None]
    if isinstance(drafter, Failure):
        failures.append(drafter)
        drafter = None
    failures += memory.failures
    if launch.port in scenario.host.ports_in_use:
        failures.append(_port_failure(launch))
    facts = launch.facts(env, host.attempt, host.seconds)
    failures += _rule_failures(scenario, facts)

    base = scenario.performance
    single, peak, ttft = base.single_stream_tok_s, base.peak_tok_s, base.ttft_ms
    load = scenario.engine.phases.load
    garbled, notes = False, []
    for modifier in scenario.modifiers:
        if modifier.when.matches(facts):
            single *= modifier.single_stream_factor
            peak *= modifier.peak_factor
            ttft *= modifier.ttft_factor
            load *= modifier.load_factor
            garbled = modifier.output == "garbled" if modifier.output else garbled
            notes += modifier.log
    spec = _spec_plan(drafter, launch, scenario) if drafter is not None and launch.speculative else None
    if spec is not None:
        single *= spec.speedup
        peak *= min(spec.speedup, 1.0) * scenario.speculative.peak_efficiency
    performance = Performance(single, max(peak, single), ttft, base.prefill_tok_s, launch.max_running_requests)
    return Plan(
        launch=launch,
        failure=_earliest(failures),
        memory=memory,
        performance=performance,
        spec=spec,
        garbled=garbled,
        notes=notes,
        load_seconds=load,
        timed=clock_faults(scenario, gpus, host.seconds),
        strike_at_start=strike_at_start,
    )
