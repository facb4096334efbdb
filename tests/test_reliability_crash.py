"""SIGKILL the agent at random points of a simulated bring-up, resume, and repeat, many times in one test.

The runbook policy brings up Kimi-K2.5 on the simulated SM120 host (``--sim kimi-sm120``: an NCCL hang,
then an unsupported attention kernel, each diagnosed and remedied, then correctness and benchmarks).
A small step budget makes the run stop for "extend?" questions, answered with ``agent ask --answer`` or
``agent resume --answer``; those commands are killed at random too. After every cycle the suite checks
what is on disk and on the machine (see support.crash_chain.CrashChain): a loadable state; nothing
committed lost (steps, findings, processes, benchmarks, questions, answers); the journal never ahead of
the state; no engine alive that the state does not know; never two engines alive at once. At the end:
the run is done, every started call has exactly one result, no call started twice.

CI: 30 kills on the goal "serve kimi". ``OPSLOOP_HEAVY=1``: 300 kills on "serve kimi with eagle3", which
adds the off-the-shelf drafter, the drafter training job and the trained drafter. ``OPSLOOP_CRASH_SEED``
picks another sequence of kill moments.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from support.cli import journal_records
from support.crash_chain import CrashChain, call_journal_problems
from support.reliability import EngineWatcher, heavy, kill_state_processes

KILLS, GOAL = (300, "serve kimi with eagle3") if heavy() else (30, "serve kimi")
STEP_BUDGET = 8
# Budget questions take the extension; a drafter-training question (only asked when SpecForge is set up but
# broken, which kimi-sm120 is not) would take "keep the baseline", so the run still reaches done.
ANSWER = f"extend {STEP_BUDGET}, else keep the baseline"


@pytest.mark.timeout(4 * 3600 if heavy() else 1800)
def test_sigkill_at_random_points_then_resume_loses_nothing_and_reaches_done(tmp_path: Path) -> None:
    seed = int(os.environ.get("OPSLOOP_CRASH_SEED", "5"))
    rng = random.Random(seed)
    chains: list[CrashChain] = []
    most_alive = 0
    while sum(chain.kills for chain in chains) < KILLS:
        state_dir, log_dir = tmp_path / f"run-{len(chains)}", tmp_path / f"logs-{len(chains)}"
        log_dir.mkdir()
        chain = CrashChain(
            state_dir=state_dir,
            log_dir=log_dir,
            rng=rng,
            kills_wanted=KILLS - sum(done.kills for done in chains),
            answer=ANSWER,
            run_arguments=[
                "--goal",
                GOAL,
                "--sim",
                "kimi-sm120",
                "--policy",
                "runbook",
                "--max-steps",
                str(STEP_BUDGET),
            ],
        )
        chains.append(chain)
        try:
            with EngineWatcher(state_dir) as watcher:
                state = chain.run_to_done()
        finally:
            kill_state_processes(state_dir)
        assert chain.problems == [], f"seed {seed}, run {len(chains)}: {chain.problems[:5]} (logs in {log_dir})"
        assert state.status == "done" and state.summary, f"seed {seed}: the run did not reach done"
        assert watcher.most_alive <= 1, f"two engines alive at once: {watcher.crowded[:3]}"
        most_alive = max(most_alive, watcher.most_alive)
        assert call_journal_problems(journal_records(state_dir)) == []
        assert all(question.answer for question in state.questions), "a question was left unanswered"
        live = [record for record in state.processes if record.kind == "engine" and record.state == "ready"]
        assert len(live) == 1, [(record.name, record.state) for record in state.processes]
    kills = sum(chain.kills for chain in chains)
    sites: dict[str, int] = {}
    for chain in chains:
        for site, count in chain.sites.items():
            sites[site] = sites.get(site, 0) + count
    cycles = sum(len(chain.cycles) for chain in chains)
    questions = sum(len(chain.snapshots[-1].answers) for chain in chains)
    assert kills >= KILLS and most_alive == 1
    print(
        f"\nseed {seed}: {kills} kills in {cycles} commands over {len(chains)} run(s) of {GOAL!r}; "
        f"{questions} budget questions answered; kill sites {dict(sorted(sites.items()))}; 0 problems"
    )
