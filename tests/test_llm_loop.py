"""The LLM policy driving the real loop, state store and tools: finishing, blocking on a question, resuming
with the transcript, resuming from the state document alone, surviving a model outage and a crash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.llm_harness import ProviderName, agent_for, make_policy, view

from agent.escalation import answer_question
from agent.policies.llm.transcript import TRANSCRIPT_FILE
from agent.state import ProjectState
from agent.store import StateStore
from twin.model_api.script import Fault, ModelTurn, ToolUse
from twin.model_api.server import ModelServer

ASK = {
    "question": "Which port may the server use?",
    "evidence": ["port 30000: address already in use"],
    "hypothesis": "Another service holds port 30000.",
    "options": ["30001", "stop the other service"],
}
UPDATE = {
    "tasks": [{"id": "launch", "title": "Launch SGLang", "status": "in_progress"}],
    "findings": [{"summary": "port 30000 is taken", "evidence": ["bind: address already in use"]}],
}


def start(tmp_path: Path, goal: str = "serve the model on this host") -> tuple[StateStore, ProjectState]:
    store = StateStore(tmp_path / "state")
    state = ProjectState(goal=goal)
    store.save(state)
    return store, state


def run(
    server: ModelServer, store: StateStore, provider: ProviderName = "anthropic", stream: bool = True, **overrides: Any
) -> tuple[str, ProjectState]:
    """A fresh policy and agent on the saved state, as `agent resume` builds them, run to an exit."""
    state = store.load()
    policy = make_policy(server, provider, stream, **overrides)
    try:
        return agent_for(policy, store, state).run(), state
    finally:
        policy.close()


def test_a_run_goes_to_its_goal_and_records_usage_and_transcript(tmp_path: Path) -> None:
    store, _ = start(tmp_path)
    script = [
        ModelTurn(
            text="Recording the plan, reading the log.",
            tool_calls=[ToolUse("update_state", UPDATE), ToolUse("emit", {"text": "log line"})],
        ),
        ModelTurn(tool_calls=[ToolUse("finish", {"summary": "Served on port 30001; 41 tok/s."})]),
    ]
    with ModelServer(script) as server:
        event, state = run(server, store)
    assert event == "done" and state.status == "done"
    assert state.summary == "Served on port 30001; 41 tok/s."
    assert [task.id for task in state.tasks] == ["launch"]
    assert state.usage.model_calls == 2 and state.usage.input_tokens > 0 and state.usage.output_tokens > 0
    assert state.usage.cached_input_tokens > 0
    saved = store.load()
    assert saved.usage.model_calls == 2 and saved.loop.policy_state["llm_transcript"]["turns"] >= 3
    assert (store.state_dir / TRANSCRIPT_FILE).exists()
    answered = {result.call_id for result in server.requests[1].tool_results()}
    assert answered == set(server.requests[1].tool_call_ids()) and len(answered) == 2
    assert server.rejections == []


def test_blocked_on_a_question_then_resumed_with_the_conversation(tmp_path: Path) -> None:
    store, _ = start(tmp_path)
    with ModelServer(
        [
            ModelTurn(tool_calls=[ToolUse("emit", {"text": "bind failed"})]),
            ModelTurn(tool_calls=[ToolUse("ask_human", ASK)]),
        ]
    ) as server:
        event, state = run(server, store, "openai", False)
        assert event == "blocked" and state.status == "blocked"
        [question] = store.load().pending_questions()
        assert question.question == ASK["question"] and question.hypothesis == ASK["hypothesis"]
        earlier_calls = server.requests[1].tool_call_ids()

        saved = store.load()
        answer_question(saved, "use 30001")
        store.save(saved)
        server.enqueue(ModelTurn(tool_calls=[ToolUse("finish", {"summary": "up on 30001"})]))
        event, _ = run(server, store, "openai", False)
        resumed = server.requests[2]
    assert event == "done"
    # The resumed conversation still holds the earlier calls, and the question's call got the answer.
    ids = resumed.tool_call_ids()
    assert ids[: len(earlier_calls)] == earlier_calls and len(ids) == len(earlier_calls) + 1
    answer = {result.call_id: result for result in resumed.tool_results()}[ids[-1]]
    assert "use 30001" in answer.content and not answer.is_error
    assert server.rejections == []


def _block_on_a_question(server: ModelServer, store: StateStore) -> None:
    event, _ = run(server, store)
    assert event == "blocked"
    saved = store.load()
    answer_question(saved, "use 30001")
    store.save(saved)


def test_a_lost_transcript_resumes_from_the_state_document_alone(tmp_path: Path) -> None:
    store, _ = start(tmp_path)
    with ModelServer(
        [ModelTurn(tool_calls=[ToolUse("update_state", UPDATE)]), ModelTurn(tool_calls=[ToolUse("ask_human", ASK)])]
    ) as server:
        _block_on_a_question(server, store)
        (store.state_dir / TRANSCRIPT_FILE).unlink()
        server.enqueue(ModelTurn(tool_calls=[ToolUse("finish", {"summary": "up on 30001"})]))
        event, state = run(server, store)
        resumed = server.requests[2]
    assert event == "done" and state.summary == "up on 30001"
    closing = resumed.last_user_text()
    assert resumed.tool_call_ids() == []
    assert "resumed from the state document alone" in closing and "no transcript was found" in closing
    assert "use 30001" in closing and "port 30000 is taken" in closing and "<state_document>" in closing
    assert server.rejections == []


def test_a_corrupt_transcript_is_not_fatal(tmp_path: Path) -> None:
    store, _ = start(tmp_path)
    with ModelServer([ModelTurn(tool_calls=[ToolUse("ask_human", ASK)])]) as server:
        _block_on_a_question(server, store)
        (store.state_dir / TRANSCRIPT_FILE).write_bytes(b'\x00\xff not json\n{"kind": "turn"}\n')
        server.enqueue(ModelTurn(tool_calls=[ToolUse("finish", {"summary": "done"})]))
        event, _ = run(server, store)
        closing = server.requests[1].last_user_text()
    assert event == "done"
    assert "resumed from the state document alone" in closing and "unreadable transcript lines" in closing


def test_a_model_outage_blocks_with_a_question_and_resume_picks_up_the_results(tmp_path: Path) -> None:
    store, _ = start(tmp_path)
    with ModelServer(
        [ModelTurn(tool_calls=[ToolUse("emit", {"text": "weights 61/61 loaded"})]), *[Fault.overloaded()] * 3]
    ) as server:
        event, _ = run(server, store, retry={"max_attempts": 3})
        assert event == "blocked"
        [question] = store.load().pending_questions()
        assert question.kind == "model_unavailable" and len(question.evidence) == 3
        first_call = server.requests[0].tool_call_ids() or []
        saved = store.load()
        answer_question(saved, "retry now")
        store.save(saved)
        server.enqueue(ModelTurn(tool_calls=[ToolUse("finish", {"summary": "loaded"})]))
        event, _ = run(server, store)
        resumed = server.requests[-1]
    assert event == "done"
    emitted = [result for result in resumed.tool_results() if "weights 61/61 loaded" in result.content]
    assert len(emitted) == 1 and not emitted[0].is_error
    assert "retry now" in resumed.last_user_text()
    assert first_call == []  # the first request had no history yet


def test_turns_the_state_never_committed_are_dropped_on_resume(tmp_path: Path) -> None:
    store, state = start(tmp_path)
    with ModelServer(
        [
            ModelTurn(tool_calls=[ToolUse("emit", {"text": "step one"}, id="toolu_committed")]),
            ModelTurn(tool_calls=[ToolUse("emit", {"text": "never run"}, id="toolu_lost")]),
            ModelTurn(tool_calls=[ToolUse("finish", {"summary": "done"})]),
        ]
    ) as server:
        policy = make_policy(server, "anthropic", False)
        agent_for(policy, store, state).step()  # one whole step, committed to the state file
        # The agent dies after the next model call, before the loop could save that decision:
        policy.decide(view(state.model_copy(deep=True), store.state_dir))
        policy.close()
        assert "toolu_lost" in (store.state_dir / TRANSCRIPT_FILE).read_text()
        event, _ = run(server, store, "anthropic", False)
        resumed = server.requests[2]
    assert event == "done"
    assert resumed.tool_call_ids() == ["toolu_committed"]
    [result] = resumed.tool_results()
    assert result.call_id == "toolu_committed" and "step one" in result.content
    assert "never run" not in resumed.all_text()


KEY_BODY = "MIIEpAIBAAKCAQEA" + "Kb7" * 20
PLANTED = {  # secret -> the line that carries it, one of each shape the redactor must catch
    "hf_" + "Q" * 30: "HF_TOKEN={}",
    "sk-ant-admin01-" + "Qp4" * 12: "Authorization: Bearer {}",
    "url-pass-" + "Ud6" * 6: "pip https://ops:{}@pypi.example.test/simple",
    KEY_BODY: "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
    "wJalrXUtnFEMI/K7MDENG/" + "Aw2" * 6: "aws_secret_access_key = {}",
    "glpat-" + "Gl9" * 7: "token {}",
    "AIzaSy" + "Go1" * 11: "maps key {}",
    "T0OPSLOOP/B0OPSLOOP/" + "Sx4" * 8: "slack https://hooks.slack.com/services/{}",
}


def test_secrets_reach_neither_the_transcript_nor_the_model(tmp_path: Path) -> None:
    """Each planted shape, in a tool's output, is redacted in the transcript and in what the model is sent."""
    store, _ = start(tmp_path)
    text = "\n".join(line.format(secret) for secret, line in PLANTED.items())
    with ModelServer(
        [
            ModelTurn(tool_calls=[ToolUse("emit", {"text": text})]),
            ModelTurn(tool_calls=[ToolUse("finish", {"summary": "ok"})]),
        ]
    ) as server:
        event, _ = run(server, store)
    assert event == "done"
    transcript = (store.state_dir / TRANSCRIPT_FILE).read_text()
    results = server.requests[1].tool_results()
    assert len(results) == 1 and "[REDACTED]" in transcript and "[REDACTED]" in results[0].content
    leaks = [secret for secret in PLANTED if secret in transcript or secret in results[0].content]
    assert leaks == []
