"""``agent status``: the state document as a hand-over note (or as JSON)."""

from __future__ import annotations

from agent.cli.app import app
from agent.cli.common import (
    JsonOption,
    StateArgument,
    StateDirOption,
    locate,
    print_json,
    print_text,
    usage_errors,
)
from agent.lock import holder_pid
from agent.render import render_status
from agent.store import StateStore


@app.command()
def status(target: StateArgument = None, state_dir: StateDirOption = None, json_output: JsonOption = False) -> None:
    """Show where the run stands: hardware, software, what was tried, what runs, benchmarks, questions."""
    with usage_errors():
        directory, file = locate(target, state_dir)
        state = StateStore(directory).load(file)
        if json_output:
            print_json(state.model_dump(mode="json"))
        else:
            print_text(render_status(state, directory, holder_pid(directory)))
