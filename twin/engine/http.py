"""A small HTTP/1.1 server on asyncio streams: keep-alive, JSON bodies, chunked streaming responses.

Lean on purpose: benchmark clients are measured against it, so each streamed token costs one write.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Payload Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
MAX_BODY = 64 * 1024 * 1024


class BadRequest(Exception):
    pass


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    peer: str = "127.0.0.1:0"

    def json(self) -> Any:
        if not self.body:
            return {}
        try:
            return json.loads(self.body)
        except (ValueError, UnicodeDecodeError) as error:
            raise BadRequest(f"request body is not valid JSON: {error}") from None


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, document: Any, status: int = 200) -> Response:
        return cls(status, json.dumps(document).encode("utf-8"))

    @classmethod
    def text(cls, text: str, status: int = 200, content_type: str = "text/plain; charset=utf-8") -> Response:
        return cls(status, text.encode("utf-8"), content_type)


@dataclass
class StreamResponse:
    chunks: AsyncIterator[bytes]
    status: int = 200
    content_type: str = "text/event-stream"


Handler = Callable[[Request], Awaitable[Response | StreamResponse]]


async def _read_request(reader: asyncio.StreamReader, peer: str) -> Request | None:
    line = await reader.readline()
    if not line:
        return None
    try:
        method, target, _version = line.decode("latin-1").strip().split(" ", 2)
    except ValueError:
        raise BadRequest("malformed request line") from None
    headers: dict[str, str] = {}
    while True:
        header = await reader.readline()
        if header in (b"\r\n", b"\n", b""):
            break
        name, _, value = header.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = b""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readline()
                break
            parts.append(await reader.readexactly(size))
            await reader.readline()
        body = b"".join(parts)
    elif "content-length" in headers:
        length = int(headers["content-length"])
        if length > MAX_BODY:
            raise BadRequest("request body too large")
        body = await reader.readexactly(length)
    split = urlsplit(target)
    return Request(method.upper(), split.path, parse_qs(split.query), headers, body, peer)


def _head(status: int, content_type: str, extra: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'OK')}", f"content-type: {content_type}"]
    lines += [f"{name}: {value}" for name, value in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class HttpServer:
    def __init__(self, handler: Handler, on_request: Callable[[Request, int], None] | None = None) -> None:
        self.handler = handler
        self.on_request = on_request

    async def serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        address = writer.get_extra_info("peername") or ("127.0.0.1", 0)
        peer = f"{address[0]}:{address[1]}"
        try:
            while True:
                try:
                    request = await _read_request(reader, peer)
                except BadRequest as error:
                    await self._send(writer, Response.json({"error": str(error)}, 400), close=True)
                    return
                if request is None:
                    return
                try:
                    response = await self.handler(request)
                except BadRequest as error:
                    response = Response.json(
                        {"object": "error", "message": str(error), "type": "BadRequestError", "code": 400},
                        400,
                    )
                if self.on_request is not None:
                    self.on_request(request, response.status)
                close = request.headers.get("connection", "").lower() == "close"
                await self._send(writer, response, close)
                if close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _send(self, writer: asyncio.StreamWriter, response: Response | StreamResponse, close: bool) -> None:
        connection = {"connection": "close" if close else "keep-alive"}
        if isinstance(response, Response):
            headers = {"content-length": str(len(response.body)), **connection, **response.headers}
            writer.write(_head(response.status, response.content_type, headers) + response.body)
            await writer.drain()
            return
        writer.write(
            _head(
                response.status,
                response.content_type,
                {"transfer-encoding": "chunked", "cache-control": "no-cache", **connection},
            )
        )
        chunks = response.chunks
        try:
            async for chunk in chunks:
                writer.write(f"{len(chunk):x}\r\n".encode("latin-1") + chunk + b"\r\n")
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        finally:
            closer = getattr(chunks, "aclose", None)
            if closer is not None:
                await closer()
