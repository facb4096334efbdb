"""``agent resume``: continue a run from its state, after a crash, a stop or an answer."""

from __future__ import annotations

from pathlib import Path

from agent.cli.app import app
from agent.cli.common import (
    EXIT_BLOCKED,
    EXIT_DONE,
    AnswerOption,
    ConfigOption,
    JsonOption,
    MaxCostOption,
    MaxStepsOption,
    MaxWallOption,
    NotifyOption,
    QuestionIdOption,
    StateArgument,
    StateDirOption,
    finish,
    locate,
    print_json,
    print_text,
    progress,
    usage_errors,
)
from agent.cli.session import outcome, prepare_agent, run_session
from agent.config import load_config
from agent.escalation import answer_question, settle_limit_questions
from agent.events import UsageError
from agent.limits import set_limits
from agent.lock import StateDirectoryLock
from agent.render import render_report
from agent.store import LATEST_FILE, StateStore
from agent.tamper import stop_if_tampered


@app.command()
def resume(
    target: StateArgument = None,
    state_dir: StateDirOption = None,
    answer: AnswerOption = None,
    question_id: QuestionIdOption = None,
    notify: NotifyOption = None,
    config: ConfigOption = None,
    max_steps: MaxStepsOption = None,
    max_wall_seconds: MaxWallOption = None,
    max_cost_usd: MaxCostOption = None,
    json_output: JsonOption = False,
) -> None:
    """Continue a run where it stopped (the policy, host and flags of `agent run` are remembered)."""
    with usage_errors():
        directory, file = locate(target, state_dir)
        if file.name != LATEST_FILE:
            raise UsageError(
                f"resume continues from {directory / LATEST_FILE}; to go back to {file.name}, "
                f"copy it over {LATEST_FILE} first"
            )
        if not file.exists():
            raise UsageError(f"no state file at {file}; start a run with `agent run --goal ...`")
        with StateDirectoryLock(directory):
            store = StateStore(directory)
            state = store.load()
            if answer is not None:
                question = answer_question(state, answer, question_id)
                store.save(state)  # the answer is kept even if building the run fails below
                store.journal.record("answer", question_id=question.id, answer=question.answer)
            raised = set_limits(state, max_steps, max_wall_seconds, max_cost_usd)
            if raised:
                state.add_finding("budget set on the command line: " + "; ".join(raised))
                settle_limit_questions(state, "budget raised on the command line: " + "; ".join(raised))
            raw = store.secrets()
            if notify:
                raw_notify = list(dict.fromkeys([*(raw.notify or state.run.notify), *notify]))
                state.run.notify = list(dict.fromkeys([*state.run.notify, *notify]))
                store.keep_secrets(raw_notify, raw.config_overrides)
            if config is not None:
                state.run.config_file = str(config.absolute())
            stop_if_tampered(store, state)
            if state.status == "done" or state.pending_questions():
                store.save(state)
                code = EXIT_DONE if state.status == "done" else EXIT_BLOCKED
                if code == EXIT_BLOCKED:
                    progress("still waiting for an answer: use --answer TEXT, or `agent ask --answer`")
                _report(store, code, json_output)
                finish(code)
            config_file = Path(state.run.config_file) if state.run.config_file else None
            overrides = store.secrets().config_overrides or state.run.config_overrides
            settings = load_config(directory, config_file, overrides=overrides)
            agent = prepare_agent(
                store, state, settings, resumed=True, notify=store.secrets().notify or state.run.notify
            )
            code = run_session(agent, resumed=True, json_output=json_output)
    finish(code)


def _report(store: StateStore, code: int, json_output: bool) -> None:
    state = store.load()
    if json_output:
        event = "done" if state.status == "done" else "blocked"
        print_json(outcome(state, store.state_dir, event, code))
    else:
        print_text(render_report(state, store.state_dir))
