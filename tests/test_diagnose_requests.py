"""Errors of single requests while the engine serves are no failure of the engine (invented logs in the
engines' style; the rules alone decide, with an empty learned model)."""

from __future__ import annotations

from tools.logs.diagnose import Diagnosis, DiagnosisHints, diagnose_text
from tools.logs.learned import LearnedModel

ANSWERED = '(APIServer pid=7) INFO:     127.0.0.1:40112 - "POST /v1/completions HTTP/1.1" 200 OK\n'
REQUEST_TRACEBACK = (
    "(APIServer pid=7) ERROR 06-02 11:00:01 [serving_chat.py:1] Error in preprocessing prompt inputs\n"
    "(APIServer pid=7) ERROR 06-02 11:00:01 [serving_chat.py:1] Traceback (most recent call last):\n"
    '(APIServer pid=7) ERROR 06-02 11:00:01 [serving_chat.py:1]   File "/opt/venv/lib/python3.12/site-packages/'
    'vllm/entrypoints/openai/serving_chat.py", line 210, in create_chat_completion\n'
    '(APIServer pid=7) ERROR 06-02 11:00:01 [serving_chat.py:1]   File "/opt/venv/lib/python3.12/site-packages/'
    'vllm/entrypoints/chat_utils.py", line 1180, in apply_hf_chat_template\n'
    "(APIServer pid=7) ERROR 06-02 11:00:01 [serving_chat.py:1] jinja2.exceptions.UndefinedError: 'tools' is "
    "undefined\n"
)


def rules_alone(text: str, hints: DiagnosisHints | None = None) -> Diagnosis:
    return diagnose_text(text, hints, model=LearnedModel())


def test_a_request_failing_in_the_api_layer_while_serving_leaves_the_engine_healthy() -> None:
    diagnosis = rules_alone(ANSWERED + REQUEST_TRACEBACK + ANSWERED)
    assert diagnosis.diagnosis_class == "healthy", diagnosis.why
    assert diagnosis.findings == ["requests_failed"]


def test_the_same_error_before_any_request_was_answered_is_a_failure() -> None:
    started = "(APIServer pid=7) INFO 06-02 11:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
    assert rules_alone(started + REQUEST_TRACEBACK).diagnosis_class != "healthy"


def test_an_exited_server_or_a_dead_engine_is_a_failure_even_after_answered_requests() -> None:
    exited = rules_alone(ANSWERED + REQUEST_TRACEBACK, DiagnosisHints(exit_code=1))
    assert exited.diagnosis_class != "healthy" and "requests_failed" not in exited.findings
    dead = REQUEST_TRACEBACK.replace(
        "jinja2.exceptions.UndefinedError: 'tools' is undefined",
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace above.",
    )
    assert rules_alone(ANSWERED + dead).diagnosis_class != "healthy"


def test_the_scheduler_turning_away_a_long_prompt_means_the_engine_runs() -> None:
    text = (
        "Processed prompts:   0%|          | 0/64 [00:00<?, ?it/s]\n"
        "WARNING 06-02 11:00:03 scheduler.py:1] Input prompt (70211 tokens) is too long and exceeds limit of 65536\n"
    )
    assert rules_alone(text).diagnosis_class == "healthy"


def test_an_offline_run_is_serving_once_prompts_complete_not_when_its_bar_appears() -> None:
    """An offline run's bar at 0% followed by silence is a run that never got going (a hang when it stays
    silent); once some prompts are processed, the engine has served."""
    begun = "INFO 06-02 11:00:01 [llm.py:1] # GPU blocks: 4096\nProcessed prompts:   0%|          | 0/16 [00:00<?]\n"
    silent = DiagnosisHints(process_alive=True, seconds_since_output=3600.0)
    assert rules_alone(begun, silent).diagnosis_class != "healthy"
    progressed = begun + "Processed prompts:  50%|█████     | 8/16 [00:04<00:04,  2.0it/s]\n"
    assert rules_alone(progressed).diagnosis_class == "healthy"


SGLANG_READY = (
    "[2026-03-01 10:00:00] The server is fired up and ready to roll!\n"
    '[2026-03-01 10:00:05] INFO:     127.0.0.1:5522 - "POST /generate HTTP/1.1" 200 OK\n'
)


def test_a_disaggregated_transfer_that_fails_is_a_failure_and_a_cancelled_request_is_not() -> None:
    failed = SGLANG_READY + (
        "[2026-03-01 10:01:12 TP0] Decode transfer failed for request rank=0 decode_req.req.rid='5c1e' "
        "decode_req.req.bootstrap_room=771 with exception KVTransferError(bootstrap_room=771): Failed to get kvcache "
        "from prefill instance, it might be dead\n"
    )
    diagnosis = rules_alone(failed)
    assert (diagnosis.diagnosis_class, diagnosis.signature) == ("unknown", "kv-transfer-failed"), diagnosis.why
    cancelled = failed.replace("Failed to get kvcache from prefill instance, it might be dead", "Aborted by AbortReq.")
    assert rules_alone(cancelled).diagnosis_class == "healthy"  # the client cancelled it


def test_nan_in_the_logits_is_a_failure_although_the_engine_goes_on() -> None:
    text = SGLANG_READY + "[2026-03-01 10:00:06 TP0] Detected errors during sampling! NaN in the logits.\n"
    diagnosis = rules_alone(text)
    assert (diagnosis.diagnosis_class, diagnosis.signature) == ("unknown", "nan-logits"), diagnosis.why


def test_the_api_layer_warning_about_a_field_it_ignores_is_a_request_being_served() -> None:
    started = "INFO 06-02 11:00:00 [api_server.py:1] vLLM API server version 0.10.0\n"
    assert rules_alone(started).diagnosis_class == "loading"
    ignored = (
        "WARNING 06-02 11:00:05 [protocol.py:58] The following fields were present in the request but ignored: "
        "{'max_completion_tokens'}\n"
    )
    diagnosis = rules_alone(started + ignored * 3)
    assert diagnosis.diagnosis_class == "healthy", diagnosis.why


def test_a_failed_transfer_before_the_first_answer_of_an_excerpt_is_a_failure() -> None:
    """An excerpt that starts while a disaggregated decode instance serves: its failed transfer comes before any
    answered request, with no exception after it; the requests answered later do not make it healthy."""
    failed = (
        "[2026-03-01 10:01:12 TP1] Decode transfer failed for request rank=1 decode_req.req.rid='5c1e' "
        "decode_req.req.bootstrap_room=771 with exception KVTransferError(bootstrap_room=771): Failed due to an "
        "unknown reason from another rank\n"
    )
    answered = '[2026-03-01 10:01:12] INFO:     10.0.0.1:41698 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    diagnosis = rules_alone(failed + answered * 3)
    assert (diagnosis.diagnosis_class, diagnosis.signature) == ("unknown", "kv-transfer-failed"), diagnosis.why
    cancelled = failed.replace("Failed due to an unknown reason from another rank", "Aborted by AbortReq.")
    assert rules_alone(cancelled + answered * 3).diagnosis_class == "healthy"
