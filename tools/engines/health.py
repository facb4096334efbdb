"""HTTP health checks against an engine's OpenAI-compatible server."""

from __future__ import annotations

import httpx
from pydantic import BaseModel

from tools.engines.config import EngineLaunchConfig
from tools.engines.identity import foreign_server
from tools.hosts.base import Host


class HealthCheck(BaseModel):
    ok: bool
    url: str
    status_code: int | None = None
    detail: str = ""
    foreign: bool = False  # something answered, but it serves another model: not the engine launched

    def describe(self) -> str:
        code = self.status_code if self.status_code is not None else "no answer"
        return f"GET {self.url} -> {code}{f' ({self.detail})' if self.detail else ''}"


def _url(address: str, port: int) -> str:
    address = f"[{address}]" if ":" in address else address
    return f"http://{address}:{port}"


def base_url(config: EngineLaunchConfig) -> str:
    """The server's URL as seen on the host it runs on."""
    return _url(config.probe_host, config.effective_port)


def agent_url(host: Host, config: EngineLaunchConfig) -> str:
    """The server's URL as the agent reaches it: the host's own URL, or a local end of an SSH forward to it."""
    return _url(*host.endpoint(config.probe_host, config.effective_port))


def check_health(host: Host, config: EngineLaunchConfig, timeout: float = 5.0) -> HealthCheck:
    """200 from /health (or, where /health does not exist, from /v1/models) from a server that serves the
    model ``config`` launched means ready; asked from the agent through ``host``'s endpoint for the server.
    A server that answers but serves another model is not ready: ``foreign`` is set and ``detail`` says what
    it serves (see :mod:`tools.engines.identity`).

    SGLang answers 503 on /health until its warmup request has finished; vLLM answers 200 once the API
    server is up. Proxy variables are ignored: the engine is reached directly.
    """
    root = agent_url(host, config)
    with httpx.Client(timeout=timeout, trust_env=False) as client:
        for path in ("/health", "/v1/models"):
            url = root + path
            try:
                response = client.get(url)
                if response.status_code == 404 and path == "/health":
                    continue
                ok = response.status_code == 200
                foreign = foreign_server(client, root, config) if ok else None
            except httpx.HTTPError as error:
                return HealthCheck(ok=False, url=url, detail=type(error).__name__)
            if foreign is not None:
                return HealthCheck(ok=False, url=url, status_code=200, detail=foreign, foreign=True)
            return HealthCheck(ok=ok, url=url, status_code=response.status_code)
    return HealthCheck(ok=False, url=root + "/v1/models", detail="no health route")
