"""Provoke the cases of ``tests/data/real_vllm/index.toml`` on a real vLLM and keep their logs as fixtures.

``scripts/capture-real-vllm-logs [--only ID ...] [--out DIR] [--reindex]`` writes ``DIR/ID.log`` for
each case (plus ``ID.metrics.txt`` for the serving cases) and the measured fields of the index: the
exact command, the key line, readiness, the exit code or signal. ``--reindex`` runs nothing and only
recomputes the key lines from the kept logs. Paths of this machine become neutral ones (``/models/...``,
``/opt/vllm-cpu``, ``/home/user``).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from support.real_engine import DEFAULT_ENGINE_ENVIRONMENT, RealEngine, VllmServer, http_get, http_post_json, prepare
from support.real_vllm_actions import (
    MARKERS,
    TWICE,
    bad_requests,
    chat,
    freeze_server_while_loading,
    model_name,
    odd_requests,
    second_server,
    stop_under_load,
    stop_with_engine_core_frozen,
    tolerant_requests,
    wait_for_marker,
)
from support.real_vllm_index import Case, Entry, read_index, write_index
from support.real_vllm_models import Neutraliser, make_variants
from support.real_vllm_refusals import api_key, headers, refused_requests

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "data" / "real_vllm"
START_TIMEOUT = 300.0
EXIT_TIMEOUT = 90.0
LOAD_SECONDS = 25.0
STREAM_TOKENS = 1000  # well inside the cases' --max-model-len 1024 with the short prompt
# action -> (title of the process to signal, the signal); an empty title means the API server itself
KILLS = {
    "kill_worker": ("VLLM::Worker", signal.SIGKILL),
    "kill_engine_core": ("VLLM::EngineCore", signal.SIGKILL),
    "segv_worker": ("VLLM::Worker", signal.SIGSEGV),
    "term_worker": ("VLLM::Worker", signal.SIGTERM),
    "usr1_engine_core": ("VLLM::EngineCore", signal.SIGUSR1),
    "term_engine_core": ("VLLM::EngineCore", signal.SIGTERM),
    "hangup_engine_core": ("VLLM::EngineCore", signal.SIGHUP),
}
SERVER_SIGNALS = {
    "kill_server": signal.SIGKILL,
    "stop_sigterm": signal.SIGTERM,
    "stop_sigint": signal.SIGINT,
    "hangup_server": signal.SIGHUP,
    "quit_server": signal.SIGQUIT,
}
WHILE_LOADING = {
    "kill_server_loading": ("", signal.SIGKILL),
    "stop_sigterm_loading": ("", signal.SIGTERM),
    "kill_worker_loading": ("VLLM::Worker", signal.SIGKILL),
    "abort_engine_core_loading": ("VLLM::EngineCore", signal.SIGABRT),
    "stop_sigint_loading": ("", signal.SIGINT),
    "kill_engine_core_loading": ("VLLM::EngineCore", signal.SIGKILL),
    "term_engine_core_loading": ("VLLM::EngineCore", signal.SIGTERM),
    "stop_sigterm_args": ("", signal.SIGTERM),
    "stop_sigterm_weights_loaded": ("", signal.SIGTERM),
    "kill_worker_compiling": ("VLLM::Worker", signal.SIGKILL),
}
# action -> (title of the process to signal, the signal) once a long stream runs; an empty title means the API server
STREAMING_SIGNALS = {
    "stop_sigterm_streaming": ("", signal.SIGTERM),
    "kill_server_streaming": ("", signal.SIGKILL),
    "stop_sigint_streaming": ("", signal.SIGINT),
    "kill_engine_core_streaming": ("VLLM::EngineCore", signal.SIGKILL),
    "kill_worker_streaming": ("VLLM::Worker", signal.SIGKILL),
    "term_worker_streaming": ("VLLM::Worker", signal.SIGTERM),
}
LOADING_MARKER = "Starting to load model"
FROZEN_SECONDS = 30.0
REPEAT_PAUSE = 0.5  # between the two SIGTERMs of stop_sigterm_twice
SERVER_FROZEN_SECONDS = 10.0
NO_REQUESTS = ("serve_tolerant", "stop_sigterm_idle")  # actions that send no plain requests first
KEPT_AFTER_READY = ("serve", "serve_load", "serve_refused", "freeze_server_request", "serve_tolerant", "serve_bad")
KEPT_AFTER_READY += ("serve_odd", "freeze_server_loading")


def _headers(server: VllmServer) -> dict[str, str]:
    """JSON content, and the case's ``--api-key`` as bearer token when it sets one."""
    return headers(api_key(server.arguments))


def _send(entry: Entry, server: VllmServer, title: str, number: signal.Signals) -> None:
    """Send ``number`` to the processes titled ``title`` (recorded in the entry), or to the API server when empty."""
    assert server.process is not None
    if title:
        killed = server.signal_children(title, number)
        entry.extra["killed"] = f"{title} ({len(killed)} process) with {number.name}"
    else:
        server.process.send_signal(number)


def _requests(server: VllmServer) -> None:
    """One chat request and one streamed completion, both greedy."""
    url = server.base_url
    status = chat(server)
    if status != 200:
        raise RuntimeError(f"the chat request was answered {status}")
    body = {
        "model": model_name(server),
        "prompt": "The operator opened the console",
        "max_tokens": 16,
        "temperature": 0,
        "stream": True,
    }
    request = urllib.request.Request(f"{url}/v1/completions", json.dumps(body).encode(), _headers(server))
    with urllib.request.urlopen(request, timeout=120) as response:
        response.read()


def _load(server: VllmServer, seconds: float) -> None:
    """Four clients sending greedy completions; prompts repeat phrases so n-gram lookup has material."""
    deadline = time.monotonic() + seconds

    def client(number: int) -> None:
        prompt = f"step {number}: the cache is warm, the cache is warm, the cache is " * 3
        while time.monotonic() < deadline:
            http_post_json(
                f"{server.base_url}/v1/completions",
                {
                    "model": model_name(server),
                    "prompt": prompt,
                    "max_tokens": 64,
                    "temperature": 0,
                    "ignore_eos": True,
                },
            )

    threads = [threading.Thread(target=client, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _signal_while_streaming(entry: Entry, server: VllmServer, title: str, number: signal.Signals) -> None:
    """Start a long streamed completion; once its first chunk arrives, send ``number`` to the processes titled
    ``title`` (the API server when empty); read on."""
    assert server.process is not None
    body = {
        "model": model_name(server),
        "prompt": "The operator opened the console",
        "max_tokens": STREAM_TOKENS,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
    }
    request = urllib.request.Request(f"{server.base_url}/v1/completions", json.dumps(body).encode(), _headers(server))
    chunks = {"before": 0, "after": 0}
    phase = "before"
    with (
        contextlib.suppress(OSError, http.client.HTTPException),
        urllib.request.urlopen(request, timeout=120) as response,
    ):
        for line in response:
            chunks[phase] += line.startswith(b"data:")
            if phase == "before" and chunks[phase]:
                _send(entry, server, title, number)
                phase = "after"
    if phase == "before":  # the stream never started: signal all the same
        _send(entry, server, title, number)
    entry.extra["streamed_chunks"] = f"{chunks['before']} before {number.name}, {chunks['after']} after"


def _request_while_frozen(entry: Entry, server: VllmServer) -> None:
    """SIGSTOP the API server, send a chat request from a thread, SIGCONT a while later; wait for the answer."""
    assert server.process is not None
    server.process.send_signal(signal.SIGSTOP)
    statuses: list[int] = []
    thread = threading.Thread(target=lambda: statuses.append(chat(server)))
    thread.start()
    time.sleep(SERVER_FROZEN_SECONDS)
    server.process.send_signal(signal.SIGCONT)
    thread.join()
    entry.extra["frozen"] = f"API server with SIGSTOP for {SERVER_FROZEN_SECONDS:.0f} s; request answered {statuses}"


def _after_ready(entry: Entry, server: VllmServer, out: Path, neutral: Neutraliser) -> bool:
    """Provoke what the case asks for once the server is ready; True when the log was kept here already."""
    case = entry.case
    if case.action not in NO_REQUESTS:
        _requests(server)
    if case.action == "serve_tolerant":
        tolerant_requests(entry, server)
    if case.action == "serve_bad":
        bad_requests(entry, server)
    if case.action == "serve_load":
        _load(server, LOAD_SECONDS)
        time.sleep(6)  # one more stats interval, so the last lines cover the load
    if case.action == "serve_refused":
        entry.extra["refused_statuses"] = refused_requests(server.base_url, model_name(server), server.arguments)
    if case.action == "freeze_server_request":
        _request_while_frozen(entry, server)
    if case.action == "serve_odd":
        odd_requests(entry, server)
    if case.action == "second_server_same_port":
        return second_server(entry, server, out / entry.log_file, neutral)
    if case.action in KEPT_AFTER_READY:
        status, metrics = http_get(f"{server.base_url}/metrics")
        if status == 200:
            (out / f"{case.id}.metrics.txt").write_text(neutral(metrics))
            entry.extra["metrics_file"] = f"{case.id}.metrics.txt"
        (out / entry.log_file).write_text(neutral(server.log_path.read_text(errors="replace")))
        entry.extra["stop_exit_code_after_sigterm"] = str(server.stop())
        return True
    assert server.process is not None
    if case.action in KILLS:
        _send(entry, server, *KILLS[case.action])
    elif case.action in STREAMING_SIGNALS:
        _signal_while_streaming(entry, server, *STREAMING_SIGNALS[case.action])
    elif case.action in SERVER_SIGNALS:
        server.process.send_signal(SERVER_SIGNALS[case.action])
    elif case.action == "stop_sigterm_idle":
        server.process.send_signal(signal.SIGTERM)
    elif case.action == "stop_sigterm_engine_core_frozen":
        stop_with_engine_core_frozen(entry, server)
    elif case.action == "stop_sigterm_under_load":
        stop_under_load(entry, server)
    elif case.action in TWICE:
        server.process.send_signal(TWICE[case.action])
        time.sleep(REPEAT_PAUSE)
        if server.process.poll() is None:
            server.process.send_signal(TWICE[case.action])
    entry.exit_code = server.wait_exit(EXIT_TIMEOUT)
    return False


def _signal_while_loading(entry: Entry, server: VllmServer) -> None:
    """Once the log shows the model starting to load, send the case's signal to its process and wait."""
    title, number = WHILE_LOADING[entry.case.action]
    if wait_for_marker(server, MARKERS.get(entry.case.action, LOADING_MARKER), START_TIMEOUT):
        _send(entry, server, title, number)
        entry.exit_code = server.wait_exit(EXIT_TIMEOUT)
        if entry.exit_code is None:
            entry.extra["signal_while_loading"] = f"ignored: no exit within {EXIT_TIMEOUT:.0f} s"


def _freeze_while_loading(entry: Entry, server: VllmServer, out: Path, neutral: Neutraliser) -> bool:
    """Once the model starts to load, SIGSTOP the worker; keep the log as it stands a while later; True when kept."""
    if not wait_for_marker(server, LOADING_MARKER, START_TIMEOUT):
        return False
    frozen = server.signal_children("VLLM::Worker", signal.SIGSTOP)
    time.sleep(FROZEN_SECONDS)
    (out / entry.log_file).write_text(neutral(server.log_path.read_text(errors="replace")))
    server.signal_children("VLLM::Worker", signal.SIGCONT)
    entry.extra["frozen"] = f"VLLM::Worker ({len(frozen)} process) with SIGSTOP for {FROZEN_SECONDS:.0f} s"
    return True


def fill(argument: str, models: dict[str, str]) -> str:
    """Replace ``{name}`` placeholders by the paths of the models."""
    for name, path in models.items():
        argument = argument.replace("{" + name + "}", path)
    return argument


def key_line(case: Case, text: str) -> str:
    """The first whole line of ``text`` that matches the case's key pattern ('' when none does)."""
    match = re.search(case.key_pattern, text)
    if match is None:
        return ""
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return text[start : end if end >= 0 else len(text)]


def run_case(
    entry: Entry, engine: RealEngine, models: dict[str, str], out: Path, scratch: Path, neutral: Neutraliser
) -> None:
    """Run one case and fill in what was measured."""
    case = entry.case
    server = VllmServer(
        engine,
        scratch / entry.log_file,
        model=models[case.model],
        entry=case.entry,
        wrapper=list(case.wrapper),
        arguments=[fill(argument, models) for argument in case.arguments],
        environment=case.environment,
    )
    environment = {**DEFAULT_ENGINE_ENVIRONMENT, **case.environment}
    prefix = " ".join(f"{name}={shlex.quote(value)}" for name, value in environment.items())
    entry.command = neutral(f"{prefix} {shlex.join(server.command())}".replace(str(engine.python), "python"))
    entry.exit_code, entry.signal, entry.extra = None, "", {}
    holder = socket.socket() if case.action == "hold_port" else None
    if holder is not None:
        holder.bind(("127.0.0.1", server.port))
        holder.listen()
    started = time.monotonic()
    kept = False
    try:
        server.start()
        if case.action in WHILE_LOADING:
            _signal_while_loading(entry, server)
        if case.action == "freeze_worker_loading":
            kept = _freeze_while_loading(entry, server, out, neutral)
        if case.action == "freeze_server_loading":
            freeze_server_while_loading(entry, server, LOADING_MARKER, START_TIMEOUT)
        outcome: str = "frozen" if kept else server.wait(START_TIMEOUT)
        entry.ready = outcome == "ready"
        if outcome == "ready" and case.action not in ("start", "hold_port"):
            kept = _after_ready(entry, server, out, neutral)
        elif outcome == "timeout":
            entry.extra["outcome"] = "no exit and no ready within the start timeout"
    finally:
        entry.seconds = round(time.monotonic() - started, 1)
        stopped = server.stop()
        if holder is not None:
            holder.close()
    if not kept:
        if entry.exit_code is None and outcome != "timeout":
            entry.exit_code = stopped
        (out / entry.log_file).write_text(neutral(server.log_path.read_text(errors="replace")))
    if entry.exit_code is not None and entry.exit_code < 0:
        entry.signal = signal.Signals(-entry.exit_code).name
    entry.key_line = key_line(case, (out / entry.log_file).read_text())


def engine_version(engine: RealEngine) -> str:
    completed = subprocess.run(
        [str(engine.python), "-c", "import vllm; print(vllm.__version__)"], capture_output=True, text=True, check=False
    )
    return completed.stdout.strip().splitlines()[-1] if completed.stdout.strip() else "unknown"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="capture-real-vllm-logs", description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="case ids (default: all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the logs and index.toml are")
    parser.add_argument("--reindex", action="store_true", help="run nothing; recompute the key lines")
    arguments = parser.parse_args(argv)
    index = arguments.out / "index.toml"
    entries = read_index(DEFAULT_OUT / "index.toml" if not index.exists() else index)
    unknown = set(arguments.only or ()) - {entry.case.id for entry in entries}
    if unknown:
        parser.error(f"no such case: {', '.join(sorted(unknown))}")
    # A background job of a non-interactive shell starts with SIGINT and SIGQUIT ignored, and the servers would
    # inherit that: the cases that send them must meet the default dispositions an operator's server has.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    engine = prepare()
    version = engine_version(engine)
    arguments.out.mkdir(parents=True, exist_ok=True)
    if arguments.reindex:
        for entry in entries:
            if (arguments.out / entry.log_file).exists():
                entry.key_line = key_line(entry.case, (arguments.out / entry.log_file).read_text())
        write_index(entries, index, version)
        return 0
    with tempfile.TemporaryDirectory(prefix="opsloop-real-vllm-") as scratch_name:
        scratch = Path(scratch_name)
        (scratch / "variants").mkdir()
        models = make_variants(engine, scratch / "variants")
        neutral = Neutraliser(engine, scratch / "variants")
        for entry in entries:
            if arguments.only is not None and entry.case.id not in arguments.only:
                continue
            print(f"== {entry.case.id}", file=sys.stderr, flush=True)
            run_case(entry, engine, models, arguments.out, scratch, neutral)
            print(
                f"   ready={entry.ready} exit={entry.exit_code} {entry.seconds}s key: {entry.key_line[:150]}",
                file=sys.stderr,
                flush=True,
            )
            write_index(entries, index, version)  # after each case: an interrupted capture keeps what it measured
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
