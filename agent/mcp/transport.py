"""Serving the MCP server: stdio (the default), or streamable HTTP on ``HOST:PORT``.

HTTP listens on a loopback address unless a bearer token is given (the ``OPSLOOP_MCP_TOKEN``
environment variable, never a flag: command lines are visible to every user): any other address is
refused without one. When a token is set, every request must carry ``Authorization: Bearer TOKEN``
(compared in constant time), on loopback too; the SDK's DNS-rebinding protection guards loopback.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import uvicorn
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

from agent.events import UsageError

TOKEN_VARIABLE = "OPSLOOP_MCP_TOKEN"
MIN_TOKEN_LENGTH = 16
MCP_PATH = "/mcp"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class HttpAddress:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{MCP_PATH}"


def parse_address(text: str) -> HttpAddress:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6); a bare ``PORT`` means 127.0.0.1."""
    host, separator, port_text = text.strip().rpartition(":")
    if not separator:
        host, port_text = "127.0.0.1", text.strip()
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise UsageError(f"--http takes HOST:PORT (e.g. 127.0.0.1:8765), not {text!r}")
    return HttpAddress(host, int(port_text))


def check_token(address: HttpAddress, token: str | None) -> None:
    """Refuse a non-loopback address without a token, and a token too short to be one."""
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        raise UsageError(f"{TOKEN_VARIABLE} must be at least {MIN_TOKEN_LENGTH} characters")
    if not address.loopback and token is None:
        raise UsageError(
            f"serving MCP on {address.host}, which is not a loopback address, needs a bearer token: "
            f"set {TOKEN_VARIABLE} (clients then send 'Authorization: Bearer <token>')"
        )


def require_bearer(app: AsgiApp, token: str) -> AsgiApp:
    """An ASGI app that answers 401 to any HTTP request without ``Authorization: Bearer <token>``."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": b"a bearer token is required\n"})
                return
        await app(scope, receive, send)

    return guarded


def listen(address: HttpAddress) -> socket.socket:
    """Bind now, so that a taken port is a usage error before anything is served."""
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((address.host, address.port))
    except OSError as error:
        listener.close()
        raise UsageError(f"cannot listen on {address.host}:{address.port}: {error.strerror or error}") from None
    return listener


async def serve_http(server: Server[Any], listener: socket.socket, address: HttpAddress, token: str | None) -> None:
    app: AsgiApp = server.streamable_http_app(streamable_http_path=MCP_PATH, host=address.host)
    if token is not None:
        app = require_bearer(app, token)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[listener])


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
