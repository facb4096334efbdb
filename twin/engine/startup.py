"""Play the start-up of one launch in accelerated time: log lines, GPU memory, and the planned failure.

A crash writes its lines and exits with its code; a hang writes its lines and then stays alive and
silent with its GPU memory frozen. A slow load is quiet between shard progress lines, but its GPU
memory keeps growing, which is how a live load is told from a hung one.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping

from twin.clock import SimClock
from twin.engine.cluster import ClusterLink, NodeRole
from twin.engine.failure import INIT_MIB, Failure, crash
from twin.engine.logs import EngineLog, progress_bar
from twin.engine.plan import Plan
from twin.engine.startup_text import SglangText, StartupText, VllmText
from twin.host_state import HostState
from twin.ledger import GpuLedgerEntry
from twin.scenario import Scenario

TICK_SECONDS = 0.05
READ_PER_TICK = 256 * 1024  # bytes a loading process reads per tick when its load reads weights
SHARDS_LINE = "Loading safetensors checkpoint shards"


class Startup:
    def __init__(
        self,
        plan: Plan,
        scenario: Scenario,
        clock: SimClock,
        log: EngineLog,
        ledger: GpuLedgerEntry,
        env: Mapping[str, str],
        role: NodeRole | None = None,
        host_state: HostState | None = None,
    ) -> None:
        self.plan, self.scenario, self.clock, self.log, self.ledger, self.env = (
            plan,
            scenario,
            clock,
            log,
            ledger,
            env,
        )
        self.host_state = host_state
        self.timed = sorted(plan.timed, key=lambda item: item.host_seconds)
        self._host_seconds_at_start = host_state.seconds() if host_state is not None else 0.0
        self.launch = plan.launch
        text_class = SglangText if self.launch.engine == "sglang" else VllmText
        self.text: StartupText = text_class(log, plan, scenario)
        self.failure = plan.failure
        if self.failure and self.failure.phase == "cuda_graph" and not self.launch.cuda_graph:
            self.failure = Failure(
                self.failure.kind,
                "warmup",
                self.failure.lines,
                self.failure.exit_code,
                0.0,
                self.failure.ignore_sigterm,
                self.failure.source,
            )
        self.used_mib = float(INIT_MIB)
        self.role = role  # this node's place in a multi-node launch (None: one node)

    # -- mechanics --------------------------------------------------------------------------------------

    def _record(self, used_mib: float, phase: str) -> None:
        self.used_mib = used_mib
        self.ledger.update({gpu: int(used_mib) for gpu in self.plan.memory.gpus}, phase)

    def _failure_at(self, phase: str) -> float | None:
        if self.failure is not None and self.failure.phase == phase:
            return self.failure.progress
        return None

    def host_seconds(self) -> float:
        return self._host_seconds_at_start + self.clock.elapsed()

    def _check_timed(self) -> None:
        """A fault due by the host's clock strikes now if its time has come."""
        if self.timed and self.host_seconds() >= self.timed[0].host_seconds:
            self.failure = self.timed.pop(0).failure
            self.fail()

    def _stall(self, seconds: float) -> None:
        """Silent, memory frozen, for ``seconds`` of simulated time (a delayed outcome, e.g. a watchdog)."""
        self.ledger.update(phase="stalled")
        until = time.monotonic() + self.clock.real_seconds(seconds)
        while time.monotonic() < until:
            self._check_timed()
            time.sleep(min(TICK_SECONDS, max(0.001, until - time.monotonic())))

    def _happen(self) -> None:
        """What the host sees when the failure happens: the fault it strikes and the kernel's lines."""
        assert self.failure is not None
        kernel = [line.replace("{pid}", str(os.getpid())) for line in self.failure.kernel_lines]
        if self.host_state is None:
            return
        if self.failure.fault is not None:
            self.host_state.strike(self.failure.fault, kernel)
        elif kernel:
            self.host_state.log_kernel(kernel)

    def fail(self) -> None:
        """Carry out the planned failure: never returns."""
        assert self.failure is not None
        self._happen()
        self.log.lines(self.failure.lines)
        if self.failure.kind == "killed":  # the OOM killer: no last words
            self.ledger.release()
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        if self.failure.kind == "crash":
            self.ledger.release()
            sys.stderr.flush()
            os._exit(self.failure.exit_code)  # also from the warm-up thread
        self.ledger.update(phase=f"hung in {self.failure.phase}")
        if self.failure.ignore_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(3600)

    def _advance(
        self, phase: str, seconds: float, extra_mib: float, on_tick: Callable[[float], None] | None = None
    ) -> None:
        """Spend ``seconds`` of simulated time in a phase while memory grows by ``extra_mib``."""
        stop_at = self._failure_at(phase)
        stop = 1.0 if stop_at is None else stop_at
        start_mib, real = self.used_mib, self.clock.real_seconds(seconds)
        started = time.monotonic()
        while True:
            fraction = stop if real <= 0 else min(stop, (time.monotonic() - started) / real)
            self._record(start_mib + extra_mib * fraction, phase)
            if on_tick is not None:
                on_tick(fraction)
            if fraction >= stop:
                break
            self._check_timed()
            time.sleep(min(TICK_SECONDS, max(0.001, real * stop - (time.monotonic() - started))))
        if stop_at is not None:
            assert self.failure is not None
            self._stall(self.failure.after_seconds)
            self.fail()

    # -- phases -----------------------------------------------------------------------------------------

    def _cluster_failed(self, lines: list[str], exit_code: int) -> None:
        self.failure = crash(self.launch.engine, "init", lines, "cluster", exit_code=exit_code)
        self.fail()

    def _cluster_hung(self) -> None:
        self.failure = Failure("hang", "init", [], source="cluster")
        self.fail()

    def _join_cluster(self) -> None:
        assert self.role is not None
        link = ClusterLink(
            self.role,
            self.scenario.cluster,
            self.clock,
            self.env,
            self.log.write,
            self._cluster_failed,
            self._cluster_hung,
        )
        link.join()

    def _init(self) -> None:
        nodes, node = (self.role.nnodes, self.role.rank) if self.role else (1, 0)
        local = max(self.launch.tp_size // nodes, 1)
        ranks = range(node * local, (node + 1) * local)  # the ranks on this node
        for rank in ranks:
            self.text.init_begin(rank)
        if self.role is not None:
            self._join_cluster()
        all_reduce = self.launch.parsed.values.get("--disable-custom-all-reduce")
        if self.scenario.host.interconnect == "pcie" and self.launch.tp_size > 2 and not all_reduce:
            self.text.custom_all_reduce()
        if self.env.get("NCCL_DEBUG", "").upper() in {"INFO", "TRACE"}:
            p2p_off = self.env.get("NCCL_P2P_DISABLE", "0").strip() not in {"", "0"}
            for rank in ranks:
                self.text.nccl_lines(p2p_off, rank)
        self._advance("init", self.scenario.engine.phases.init, 0.0)
        for rank in ranks:
            self.text.init_end(rank)

    def _load(self) -> None:
        self.text.load_begin()
        shards, seconds = self.scenario.model.num_shards, self.plan.load_seconds
        interval = self.scenario.engine.phases.progress_interval
        behaviour = self.scenario.engine.load
        printed = {"next": 0.0}
        reader = open("/dev/zero", "rb", buffering=0) if behaviour.reads_weights else None  # noqa: SIM115

        def tick(fraction: float) -> None:
            if reader is not None:
                reader.read(READ_PER_TICK)  # real reads: the process's I/O counters rise as a load's do
            elapsed = fraction * seconds
            if elapsed + 1e-9 >= printed["next"] or fraction >= 1.0:
                done = shards if fraction >= 1.0 else int(fraction * shards)
                self.text.progress(progress_bar(SHARDS_LINE, done, shards, elapsed, seconds / shards))
                printed["next"] = float("inf") if fraction >= 1.0 else elapsed + interval

        weights = self.plan.memory.weights_mib
        try:
            self._advance("load", seconds, weights if behaviour.gpu_memory == "grows" else 0.0, tick)
        finally:
            if reader is not None:
                reader.close()
        if behaviour.gpu_memory == "at_end":
            self._record(self.used_mib + weights, "load")
        self.text.load_end()
        if self.plan.spec is not None:
            self.text.load_begin(draft=True)
            self._advance("load", self.scenario.engine.phases.draft_load, self.plan.memory.draft_mib)
            self.text.load_end(draft=True)

    def _graphs(self) -> None:
        seconds = self.scenario.engine.phases.cuda_graph
        if not self.launch.cuda_graph:
            return
        self.text.graph_begin()
        draft_share = 0.3 if self.plan.spec else 0.0
        self._advance("cuda_graph", seconds * (1 - draft_share), self.plan.memory.graph_mib * (1 - draft_share))
        self.text.graph_end(seconds * (1 - draft_share))
        if self.plan.spec is not None:
            self.text.graph_begin(draft=True)
            self._advance("cuda_graph", seconds * draft_share, self.plan.memory.graph_mib * draft_share)
            self.text.graph_end(seconds * draft_share, draft=True)

    def before_server(self) -> None:
        """Everything up to the point where the HTTP server starts listening."""
        self._record(INIT_MIB, "args")
        self.text.args()
        for note in self.launch.speculative.notes if self.launch.speculative else []:
            self.log.info(note, rank=None)
        self.log.lines(self.plan.notes)
        if self._failure_at("args") is not None:
            self.fail()
        self._init()
        self._load()
        if self._failure_at("kv_cache") is not None:
            self.fail()
        self._record(self.used_mib + self.plan.memory.kv_mib, "kv_cache")
        self.clock.sleep(self.scenario.engine.phases.kv_cache)
        self.text.kv_cache()
        self._graphs()
        if self.launch.engine == "vllm":
            self.warmup()
        self.text.summary()

    def warmup(self, announce: bool = True) -> None:
        """The first forward passes; ``announce=False`` leaves out the server's request lines (an in-process
        engine, such as SpecForge's offline capture, has no HTTP server)."""
        self._advance("warmup", self.scenario.engine.phases.warmup, 0.0)
        if announce:
            self.text.warmup()

    async def watch_serving(self) -> None:
        """While serving: a failure planned after some serving time, or one due by the host's clock."""
        planned = self.failure if self.failure is not None and self.failure.phase == "serving" else None
        until = time.monotonic() + self.clock.real_seconds(planned.after_seconds) if planned else float("inf")
        if planned is None and not self.timed:
            return
        while time.monotonic() < until:
            self._check_timed()
            await asyncio.sleep(TICK_SECONDS)
        self.fail()

    def bind_failed(self, lines: list[str]) -> None:
        self.failure = Failure("crash", "serving", lines, 1, source="port")
        self.fail()
