"""End to end: `agent run` / `agent resume` with the LLM policy, the real CLI in a subprocess, the real SDK
talking HTTP to the loopback model server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.cli import agent_environment, run_agent

from twin.model_api.script import ModelTurn, ToolUse
from twin.model_api.server import ModelServer

ASK: dict[str, Any] = {
    "question": "Which GPUs may the server use?",
    "evidence": ["GPU 3: Xid 79"],
    "hypothesis": "GPU 3 is faulty; the other seven are fine.",
    "options": ["0-2,4-7", "all"],
}
PLAN = {"tasks": [{"id": "probe", "title": "Probe the host", "status": "done"}], "next_steps": ["launch on seven GPUs"]}


def test_run_blocks_on_a_question_and_resume_continues_the_same_conversation(tmp_path: Path) -> None:
    """No --policy: the API key in the environment chooses the LLM policy; --llm-base-url points the OpenAI
    provider at an OpenAI-compatible server (as it would at a local SGLang or vLLM)."""
    state_dir = tmp_path / "state"
    script = [
        ModelTurn(text="Recording the plan.", tool_calls=[ToolUse("update_state", PLAN)]),
        ModelTurn(tool_calls=[ToolUse("ask_human", ASK)]),
        ModelTurn(tool_calls=[ToolUse("finish", {"summary": "Serving on GPUs 0-2,4-7."})]),
    ]
    environment = agent_environment(OPENAI_API_KEY="test-key")
    with ModelServer(script) as server:
        started = run_agent(
            "run",
            "--goal",
            "serve the model",
            "--provider",
            "openai",
            "--model",
            "gpt-6-luna",
            "--llm-base-url",
            server.openai_base_url,
            "--state-dir",
            state_dir,
            environment=environment,
        )
        assert started.returncode == 3, started.stderr  # blocked on a question
        assert ASK["question"] in started.stdout + started.stderr
        resumed = run_agent("resume", "--state-dir", state_dir, "--answer", "use 0-2,4-7", environment=environment)
        requests = list(server.requests)
    assert resumed.returncode == 0, resumed.stderr
    assert len(requests) == 3 and server.rejections == []
    assert {request.body["model"] for request in requests} == {"gpt-6-luna"}
    assert requests[2].tool_call_ids() == [*requests[1].tool_call_ids(), requests[2].tool_call_ids()[-1]]
    answer = requests[2].tool_results()[-1]
    assert "use 0-2,4-7" in answer.content
    state = json.loads((state_dir / "latest.json").read_text())
    assert state["status"] == "done" and state["summary"] == "Serving on GPUs 0-2,4-7."
    assert state["policy"] == "llm" and state["usage"]["model_calls"] == 3
    assert state["usage"]["input_tokens"] > 0
    assert "test-key" not in (state_dir / "transcript.jsonl").read_text()
