"""Requests and signals of the real vLLM cases that go beyond a plain start: tolerant requests, requests the
server should refuse for their content, and stops at unusual moments (under load, with the engine core frozen)."""

from __future__ import annotations

import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from support.real_engine import VllmServer, http_get
from support.real_vllm_index import Entry
from support.real_vllm_refusals import api_key, headers, post

FROZEN_ENGINE_SECONDS = 5.0  # the engine core stays stopped this long before the API server gets SIGTERM
LOAD_BEFORE_STOP_SECONDS = 3.0  # the clients run this long before the API server gets SIGTERM
SERVER_FROZEN_LOADING_SECONDS = 20.0  # the API server stays stopped this long while its engine loads
SECOND_SERVER_TIMEOUT = 120.0
MARKERS = {  # the log line a signal-while-loading action waits for when it is not 'Starting to load model'
    "stop_sigterm_args": "non-default args",
    "stop_sigterm_weights_loaded": "Loading weights took",
    "kill_worker_compiling": "Warming up model for the compilation",
}
TWICE = {"stop_sigterm_twice": signal.SIGTERM, "stop_sigint_twice": signal.SIGINT}  # the signal sent twice


def model_name(server: VllmServer) -> str:
    """The name requests must give: the last ``--served-model-name`` when the case sets one."""
    names = [
        server.arguments[at + 1] for at, argument in enumerate(server.arguments) if argument == "--served-model-name"
    ]
    return names[-1] if names else server.served_model


def chat(server: VllmServer, timeout: float = 120.0) -> int:
    """A short greedy chat request; its HTTP status."""
    messages = [{"role": "user", "content": "Say hello."}]
    body = {"model": model_name(server), "messages": messages, "max_tokens": 16, "temperature": 0}
    return post(f"{server.base_url}/v1/chat/completions", body, api_key(server.arguments), timeout)


def tolerant_requests(entry: Entry, server: VllmServer) -> None:
    """A completion and a chat request whatever they are answered; the statuses recorded in the entry."""
    body = {"model": model_name(server), "prompt": "The operator opened the console", "max_tokens": 16}
    completion = post(f"{server.base_url}/v1/completions", {**body, "temperature": 0}, api_key(server.arguments))
    entry.extra["request_statuses"] = f"completion {completion}, chat {chat(server)}"


def _raw_post(url: str, data: bytes, key: str) -> int:
    """POST ``data`` as it is (it need not be JSON); the HTTP status."""
    request = urllib.request.Request(url, data, headers(key))
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as error:
        error.read()
        return int(error.code)


def bad_requests(entry: Entry, server: VllmServer) -> None:
    """Requests refused for their content (not their size): each answer's status recorded in the entry."""
    key = api_key(server.arguments)
    chat_url = f"{server.base_url}/v1/chat/completions"
    short = {"model": model_name(server), "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8}
    schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "mystery-type"}}}
    attempts: list[tuple[str, dict[str, object]]] = [
        ("n 0", {**short, "n": 0}),
        ("temperature -1", {**short, "temperature": -1}),
        ("tool_choice required without tools", {**short, "tool_choice": "required"}),
        ("invalid JSON schema", {**short, "response_format": schema}),
        ("regex that does not compile", {**short, "structured_outputs": {"regex": "([a-z"}}),
        ("role wizard", {**short, "messages": [{"role": "wizard", "content": "Hi"}]}),
    ]
    statuses = [f"{what} {post(chat_url, body, key)}" for what, body in attempts]
    statuses.append(f"body not JSON {_raw_post(chat_url, b'{model: tiny', key)}")
    entry.extra["refused_statuses"] = ", ".join(statuses)


def stop_with_engine_core_frozen(entry: Entry, server: VllmServer) -> None:
    """SIGSTOP the VLLM::EngineCore, then SIGTERM the API server a while later (the engine core stays stopped)."""
    assert server.process is not None
    frozen = server.signal_children("VLLM::EngineCore", signal.SIGSTOP)
    time.sleep(FROZEN_ENGINE_SECONDS)
    server.process.send_signal(signal.SIGTERM)
    entry.extra["frozen"] = f"VLLM::EngineCore ({len(frozen)} process) with SIGSTOP, then SIGTERM to the API server"


def stop_under_load(entry: Entry, server: VllmServer) -> None:
    """Four clients send long completions; a while later SIGTERM the API server while they wait."""
    assert server.process is not None
    answers: list[int] = []

    def client(number: int) -> None:
        body = {"model": model_name(server), "prompt": f"client {number} asks", "max_tokens": 900}
        try:
            answers.append(post(f"{server.base_url}/v1/completions", {**body, "ignore_eos": True}, timeout=90))
        except OSError:
            answers.append(0)

    threads = [threading.Thread(target=client, args=(number,), daemon=True) for number in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(LOAD_BEFORE_STOP_SECONDS)
    server.process.send_signal(signal.SIGTERM)
    for thread in threads:
        thread.join(timeout=60)
    entry.extra["load_answers"] = f"{len(answers)} of 4 clients answered: {sorted(answers)} (0: connection broken)"


def odd_requests(entry: Entry, server: VllmServer) -> None:
    """Requests refused in other ways than ``bad_requests``: out-of-vocabulary token ids, routes the model does not
    serve, a named tool that is not offered, negative max_tokens, a stop of the wrong type; statuses recorded."""
    key = api_key(server.arguments)
    base = server.base_url
    short = {"model": model_name(server), "prompt": "The operator", "max_tokens": 8, "temperature": 0}
    tool = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
    chat_body = {"model": model_name(server), "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8}
    attempts: list[tuple[str, str, dict[str, object]]] = [
        ("token id 99999", "/v1/completions", {**short, "prompt": [5, 99999]}),
        ("logit_bias for token 99999", "/v1/completions", {**short, "logit_bias": {"99999": 5}}),
        ("max_tokens -5", "/v1/completions", {**short, "max_tokens": -5}),
        ("stop as a number", "/v1/completions", {**short, "stop": 5}),
        ("embeddings route", "/v1/embeddings", {"model": model_name(server), "input": "hello"}),
        (
            "tool named but not offered",
            "/v1/chat/completions",
            {**chat_body, "tools": [tool], "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
        ),
        ("transcription route", "/v1/audio/transcriptions", {"model": model_name(server)}),
    ]
    statuses = [f"{what} {post(base + route, body, key)}" for what, route, body in attempts]
    statuses.append(f"GET /v1/models/no-such-model {http_get(base + '/v1/models/no-such-model')[0]}")
    entry.extra["refused_statuses"] = ", ".join(statuses)


def wait_for_marker(server: VllmServer, marker: str, timeout: float) -> bool:
    """Poll the server's log until it shows ``marker``; False when the server ended or ``timeout`` passed first."""
    assert server.process is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and server.process.poll() is None:
        if marker in server.log_path.read_text(errors="replace"):
            return True
        time.sleep(0.2)
    return False


def freeze_server_while_loading(entry: Entry, server: VllmServer, marker: str, timeout: float) -> None:
    """Once the log shows ``marker``, SIGSTOP the API server, SIGCONT it a while later (the start goes on)."""
    assert server.process is not None
    if wait_for_marker(server, marker, timeout):
        server.process.send_signal(signal.SIGSTOP)
        time.sleep(SERVER_FROZEN_LOADING_SECONDS)
        server.process.send_signal(signal.SIGCONT)
        entry.extra["frozen"] = f"API server with SIGSTOP for {SERVER_FROZEN_LOADING_SECONDS:.0f} s while loading"


def second_server(entry: Entry, server: VllmServer, kept: Path, neutral: Callable[[str], str]) -> bool:
    """Start a second server with the same command and port while the first serves; wait for it to end and keep its
    log (through ``neutral``) in ``kept`` as the case's log; True."""
    log_path = server.log_path.with_suffix(".second.log")
    second = VllmServer(
        server.engine,
        log_path,
        model=server.model,
        port=server.port,
        arguments=server.arguments,
        environment=server.environment,
        entry=server.entry,
        wrapper=server.wrapper,
    ).start()
    entry.exit_code = second.wait_exit(SECOND_SERVER_TIMEOUT)  # /health would be the first server's answer
    outcome = f"exit {entry.exit_code}" if entry.exit_code is not None else f"still running, exit {second.stop()}"
    first = "still answers /health" if http_get(f"{server.base_url}/health")[0] == 200 else "no longer answers"
    entry.extra["second_server"] = f"second server on port {server.port}: {outcome}; the first {first}"
    kept.write_text(neutral(log_path.read_text(errors="replace")))
    return True
