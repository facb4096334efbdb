"""A real loopback HTTP server that speaks the Anthropic Messages API, OpenAI Chat Completions and the
OpenAI Responses API.

It plays a script of model turns and faults (see ``model_script``), answers non-streaming requests with
JSON and streaming ones with server-sent events (Anthropic: message_start, content_block_start,
content_block_delta with text / input_json / thinking / signature deltas, content_block_stop,
message_delta, message_stop; Chat Completions: chat.completion.chunk objects with tool_calls deltas, a
usage chunk, ``[DONE]``; Responses: response.* events ending in response.completed), rejects requests the
real services would reject (see ``model_rules``: unpaired calls, changed or missing thinking, tools on
Chat Completions for models that need Responses, a missing ``reasoning_content``, invalid ids, prompts
over ``context_window``), and records every request it received. ``GET /v1/models`` lists the model
with its ``max_model_len`` (as SGLang and vLLM do); ``GET /v1/models/{id}`` answers Anthropic's Models
API. The real SDKs talk to it with ``base_url`` set; nothing in them is patched.

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

from twin.model_api import chat, replies, wire
from twin.model_api.rules import ThinkingLedger
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
        self,
        script: Iterable[Step] = (),
        *,
        responder: Responder | None = None,
        model: str = "scripted-model",
        reasoning_field: str | None = None,
        context_window: int | None = None,
    ) -> None:
        """``reasoning_field``: thinking mode on Chat Completions (reasoning goes out in this field and
        must come back on every assistant tool-call message); ``context_window``: refuse longer prompts
        and report it under ``/v1/models``."""
        self.model = model
        self.responder = responder
        self.reasoning_field = reasoning_field
        self.context_window = context_window
        self.ledger = ThinkingLedger()
        self.requests: list[RecordedRequest] = []
        self.rejections: list[str] = []
        self._script: deque[Step] = deque(script)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._anthropic_cache = wire.AnthropicCache()
        self._openai_cache = chat.OpenAICache()
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

    def usage_for(self, api: Api, body: dict[str, Any]) -> tuple[int, int, dict[str, Any]]:
        with self._lock:
            if api == "anthropic":
                usage = self._anthropic_cache.usage(body)
                return 0, 0, usage
            prompt = replies.prompt_tokens(api, body)
            cache_view = (
                {"tools": body.get("tools"), "messages": [body.get("instructions"), body.get("input")]}
                if api == "responses"
                else body
            )
            return prompt, self._openai_cache.cached_tokens(cache_view), {}

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

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        server = self.model_server
        if path.endswith("/v1/models"):
            entry = {
                "id": server.model,
                "object": "model",
                "created": 0,
                "owned_by": "scripted",
                "max_model_len": server.context_window,
            }
            self._send_json(200, {"object": "list", "data": [entry]})
        elif "/v1/models/" in path:
            self._send_json(
                200,
                {
                    "type": "model",
                    "id": path.rsplit("/", 1)[-1],
                    "display_name": "Scripted",
                    "created_at": "2026-01-01T00:00:00Z",
                    "max_input_tokens": server.context_window,
                    "max_tokens": 32_000,
                },
            )
        else:
            self._send_json(404, {"error": {"type": "not_found_error", "message": f"no route {path}"}})

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        api: Api | None = (
            "anthropic"
            if path.endswith("/v1/messages")
            else "openai"
            if path.endswith("/chat/completions")
            else "responses"
            if path.endswith("/responses")
            else None
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
        problems = replies.problems(server, api, body)
        tokens = replies.prompt_tokens(api, body)
        if server.context_window is not None and tokens > server.context_window:
            problems.append(replies.context_message(api, tokens, server.context_window))
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
        return replies.Reply(self.model_server, api, body, turn).events()

    def _complete_body(self, api: Api, body: dict[str, Any], turn: ModelTurn) -> dict[str, Any]:
        return replies.Reply(self.model_server, api, body, turn).body_json()

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
        if fault.kind == "context_exceeded":
            tokens = replies.prompt_tokens(api, body)
            self._send_error(
                api, 400, replies.context_message(api, tokens, max(tokens // 2, 1)), code="context_length_exceeded"
            )
            return
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
            elif api == "responses":
                error = {
                    "type": "error",
                    "code": "server_error",
                    "message": "scripted failure",
                    "param": None,
                    "sequence_number": fault.after_events,
                }
                self._chunk(f"event: error\ndata: {json.dumps(error)}\n\n".encode())
            else:
                error = chat.openai_error("server_error", "scripted failure")
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

    def _send_error(
        self, api: Api, status: int, message: str, headers: dict[str, str] | None = None, code: str | None = None
    ) -> None:
        if api == "anthropic":
            payload = wire.anthropic_error(ANTHROPIC_ERROR_TYPES.get(status, "api_error"), message)
        else:
            payload = chat.openai_error("invalid_request_error" if status < 500 else "server_error", message, code)
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
