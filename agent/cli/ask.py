"""``agent ask``: show the questions waiting for a human, or record an answer."""

from __future__ import annotations

from typing import Annotated

import typer

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
from agent.escalation import Decision, answer_question, resume_command
from agent.events import UsageError
from agent.lock import StateDirectoryLock
from agent.render import render_question
from agent.store import LATEST_FILE, StateStore
from tools.base import APPROVAL_WORD


@app.command()
def ask(
    target: StateArgument = None,
    state_dir: StateDirOption = None,
    answer: AnswerOption = None,
    question_id: QuestionIdOption = None,
    approve: Annotated[
        str | None, typer.Option("--approve", help="Approve the question with this id (the only way besides its word).")
    ] = None,
    deny: Annotated[
        str | None, typer.Option("--deny", help="Deny the question with this id (--answer: guidance).")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Show pending questions; with --answer, record the answer (then `agent resume` continues). A question
    asking for approval is approved only by --approve ID or by an answer that is exactly its approval word."""
    with usage_errors():
        directory, file = locate(target, state_dir)
        decision, question_id, answer = _decision(approve, deny, question_id, answer)
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
        if not file.exists():
            raise UsageError(f"no state file at {file}; nothing to answer")
        with StateDirectoryLock(directory):
            state = store.load()
            question = answer_question(state, answer, question_id, decision)
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
            verdict = ""
            if question.approval_word is not None:
                verdict = " (approved)" if question.approved else " (denied)"
            print_text(f"Recorded the answer to {question.id}{verdict}. Continue with: {resume_command(directory)}")


def _decision(
    approve: str | None, deny: str | None, question_id: str | None, answer: str | None
) -> tuple[Decision | None, str | None, str | None]:
    """(decision, question id, answer text) from --approve / --deny / --id / --answer."""
    if approve is None and deny is None:
        return None, question_id, answer
    if approve is not None and deny is not None:
        raise UsageError("give --approve or --deny, not both")
    chosen = approve if approve is not None else deny
    if question_id is not None and question_id != chosen:
        raise UsageError(f"--id {question_id} and the question {chosen} differ; give one")
    if approve is not None:
        if answer is not None:
            raise UsageError("--approve takes no --answer: an approval is exactly that")
        return "approve", approve, APPROVAL_WORD
    return "deny", deny, answer or "deny"
