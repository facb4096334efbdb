"""``agent ask``: show the questions waiting for a human, or record an answer."""

from __future__ import annotations

from agent.cli.app import app
from agent.cli.common import (
    AnswerOption,
    JsonOption,
    QuestionIdOption,
    StateArgument,
    StateDirOption,
    locate,
    print_json,
    print_text,
    usage_errors,
)
from agent.escalation import answer_question, resume_command
from agent.events import UsageError
from agent.lock import StateDirectoryLock
from agent.render import render_question
from agent.store import LATEST_FILE, StateStore


@app.command()
def ask(
    target: StateArgument = None,
    state_dir: StateDirOption = None,
    answer: AnswerOption = None,
    question_id: QuestionIdOption = None,
    json_output: JsonOption = False,
) -> None:
    """Show pending questions; with --answer, record the answer (then `agent resume` continues)."""
    with usage_errors():
        directory, file = locate(target, state_dir)
        store = StateStore(directory)
        if answer is None:
            state = store.load(file)
            pending = state.pending_questions()
            if json_output:
                print_json(
                    {
                        "run_id": state.run_id,
                        "status": state.status,
                        "state_file": str(file),
                        "questions": [question.model_dump(mode="json") for question in pending],
                    }
                )
            elif not pending:
                print_text(f"No question is waiting for an answer (run {state.run_id} is {state.status}).")
            else:
                print_text("\n\n".join(render_question(question, directory) for question in pending))
            return
        if file.name != LATEST_FILE:
            raise UsageError(f"answers are recorded in {directory / LATEST_FILE}, not in {file.name}")
        with StateDirectoryLock(directory):
            state = store.load()
            question = answer_question(state, answer, question_id)
            store.save(state)  # the state first: the journal never claims an answer the state lacks
            store.journal.record("answer", question_id=question.id, answer=question.answer)
            store.close()
        if json_output:
            print_json(
                {
                    "answered": question.model_dump(mode="json"),
                    "resume_command": resume_command(directory),
                    "pending": [item.id for item in state.pending_questions()],
                }
            )
        else:
            print_text(f"Recorded the answer to {question.id}. Continue with: {resume_command(directory)}")
