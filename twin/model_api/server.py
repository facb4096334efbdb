"""A real loopback HTTP server that speaks the Anthropic Messages API and OpenAI Chat Completions.

It plays a script of model turns and faults (see ``model_script``), answers non-streaming requests with
JSON and streaming ones with server-sent events (Anthropic: message_start, content_block_start,
content_block_delta with text_delta / input_json_delta, content_block_stop, message_delta, message_stop;
OpenAI: chat.completion.chunk objects with tool_calls deltas, a usage chunk, ``[DONE]``), rejects requests
the real APIs would reject (an unanswered tool call, a result for an unknown call), and records every
request it received. The real SDKs talk to it with ``base_url`` set; nothing in them is patched.

Usage::

    with ModelServer([ModelTurn(tool_calls=[ToolUse("probe_system")]), Fault.overloaded()]) as server:
        client = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="test-key")
        ...
        assert server.requests[0].tool_names()

Long runs (benchmarks) pass ``responder``: a function from the recorded request to the next step, used
once the script is empty. Binds 127.0.0.1 only.
"""

from __future__ import annotations

import json
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar

from twin.model_api import wire
from twin.model_api.script import Api, Fault, ModelTurn, RecordedRequest, Step

Responder = Callable[[RecordedRequest], Step]
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class ModelServer:
    def __init__(
        self, script: Iterable[Step] = (), *, responder: Responder | None = None, model: str = "scripted-model"
    ) -> None:
        self.model = model
        self.responder = responder
        self.requests: list[RecordedRequest] = []
        self.rejections: list[str] = []
        self._script: deque[Step] = deque(script)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._anthropic_cache = wire.AnthropicCache()
        self._openai_cache = wire.OpenAICache()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------------------

    def start(self) -> ModelServer:
        handler = type("BoundHandler", (_Handler,), {"model_server": self})
        self._httpd = _QuietServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="model-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "start the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    # -- the script -----------------------------------------------------------------------------------------

    def enqueue(self, *steps: Step) -> None:
        with self._lock:
            self._script.extend(steps)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def answered(self, api: Api | None = None) -> list[RecordedRequest]:
        """Requests that got a model turn (not a fault or a rejection)."""
        return [request for request in self.requests if request.answer == "turn" and api in (None, request.api)]

    def _next_step(self, request: RecordedRequest) -> Step | None:
        with self._lock:
            if self._script:
                return self._script.popleft()
        return self.responder(request) if self.responder is not None else None

    def _record(self, api: Api, path: str, headers: dict[str, str], body: dict[str, Any], size: int) -> RecordedRequest:
        with self._lock:
            request = RecordedRequest(
                index=len(self.requests), api=api, path=path, headers=headers, body=body, raw_size=size
            )
            self.requests.append(request)
            return request

    def _usage(self, api: Api, body: dict[str, Any]) -> tuple[int, int, dict[str, int]]:
        with self._lock:
            if api == "anthropic":
                usage = self._anthropic_cache.usage(body)
                return 0, 0, usage
            prompt = wire.tokens(json.dumps([body.get("tools"), body.get("messages")]))
            return prompt, self._openai_cache.cached_tokens(body), {}

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that drops its connection (a timeout, a closed pool) is normal here, not news."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError | TimeoutError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle's algorithm on, the client's delayed ACK
    # would hold every response back by tens of milliseconds.
    disable_nagle_algorithm = True
    model_server: ClassVar[ModelServer]

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read the recorded requests instead."""

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        api: Api | None = (
            "anthropic" if path.endswith("/v1/messages") else "openai" if path.endswith("/chat/completions") else None
        )
        raw = self._read_body()
        if api is None:
            self._send_json(404, {"error": {"type": "not_found_error", "message": f"no route {path}"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as error:
            self._send_error(api, 400, f"the request body is not JSON: {error}")
            return
        server = self.model_server
        request = server._record(
            api, path, {name.lower(): value for name, value in self.headers.items()}, body, len(raw)
        )
        problems = wire.anthropic_problems(body) if api == "anthropic" else wire.openai_problems(body)
        if problems:
            request.answer = f"rejected: {problems[0]}"
            server.rejections.extend(problems)
            self._send_error(api, 400, "; ".join(problems))
            return
        step = server._next_step(request)
        if step is None:
            request.answer = "exhausted"
            self._send_error(api, 400, f"the scripted model has no turn left for request #{request.index}")
        elif isinstance(step, Fault):
            request.answer = f"fault:{step.kind}"
            self._fault(api, body, step)
        else:
            request.answer = "turn"
            self._reply(api, body, step)

    # -- replies --------------------------------------------------------------------------------------------

    def _events(self, api: Api, body: dict[str, Any], turn: ModelTurn) -> list[bytes]:
        prompt, cached, usage = self.model_server._usage(api, body)
        if api == "anthropic":
            return [
                f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()
                for name, payload in wire.anthropic_events(turn, self.model_server.model, usage)
            ]
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = wire.openai_chunks(turn, self.model_server.model, prompt, cached, include_usage)
        return [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks] + [b"data: [DONE]\n\n"]

    def _complete_body(self, api: Api, body: dict[str, Any], turn: ModelTurn) -> dict[str, Any]:
        prompt, cached, usage = self.model_server._usage(api, body)
        if api == "anthropic":
            return wire.anthropic_message(turn, self.model_server.model, usage)
        return wire.openai_completion(turn, self.model_server.model, prompt, cached)

    def _reply(self, api: Api, body: dict[str, Any], turn: ModelTurn) -> None:
        if body.get("stream"):
            events = self._events(api, body, turn)
            self._start_stream()
            for event in events:
                self._chunk(event)
            self._chunk(b"")
        else:
            self._send_json(200, self._complete_body(api, body, turn))

    def _fault(self, api: Api, body: dict[str, Any], fault: Fault) -> None:
        if fault.kind == "status":
            headers = {}
            if fault.retry_after is not None:
                headers["retry-after"] = f"{fault.retry_after:g}"
            if fault.retry_after_ms is not None:
                headers["retry-after-ms"] = f"{fault.retry_after_ms:g}"
            self._send_error(api, fault.status, fault.message or f"scripted HTTP {fault.status}", headers)
            return
        if fault.kind == "delay" or (fault.kind == "stall_stream" and not body.get("stream")):
            self.model_server._wait(fault.seconds)
            self._quietly(lambda: self._reply(api, body, fault.partial_turn()))
            self.close_connection = True
            return
        if not body.get("stream"):
            if fault.kind == "stream_error":
                self._send_error(api, 529 if api == "anthropic" else 500, "scripted failure")
                return
            payload = json.dumps(self._complete_body(api, body, fault.partial_turn())).encode()
            self._quietly(lambda: self._cut_body(payload))
            return
        events = self._events(api, body, fault.partial_turn())
        self._start_stream()
        for event in events[: fault.after_events]:
            self._chunk(event)
        if fault.kind == "stream_error":
            if api == "anthropic":
                error = wire.anthropic_error("overloaded_error", "Overloaded")
                self._chunk(f"event: error\ndata: {json.dumps(error)}\n\n".encode())
            else:
                error = wire.openai_error("server_error", "scripted failure")
                self._chunk(f"data: {json.dumps(error)}\n\n".encode())
            self._chunk(b"")
        elif fault.kind == "stall_stream":
            self.model_server._wait(fault.seconds)
            self.close_connection = True
        elif fault.clean:
            self._chunk(b"")
        else:
            self.close_connection = True  # drop the connection inside the chunked body

    # -- HTTP plumbing ---------------------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, api: Api, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        if api == "anthropic":
            payload = wire.anthropic_error(ANTHROPIC_ERROR_TYPES.get(status, "api_error"), message)
        else:
            payload = wire.openai_error("invalid_request_error" if status < 500 else "server_error", message)
        self._send_json(status, payload, headers)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _cut_body(self, payload: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload[: len(payload) // 2])
        self.wfile.flush()
        self.close_connection = True

    def _quietly(self, action: Callable[[], None]) -> None:
        """Write to a client that may have given up already (a timeout fault)."""
        try:
            action()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
