"""The serving engine: routes, information endpoints, metrics, and periodic throughput log lines.

Routes follow SGLang's ``srt/entrypoints/http_server.py`` (``/metrics`` only with ``--enable-metrics``)
and vLLM's ``entrypoints/`` (0.33).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from twin.engine.flag_tables import parse_version
from twin.engine.generation_api import GenerationApi
from twin.engine.http import BadRequest, Request, Response, StreamResponse
from twin.engine.logs import EngineLog
from twin.engine.metrics import Counters, render_sglang, render_vllm
from twin.engine.plan import Plan
from twin.engine.scheduler import Scheduler
from twin.scenario import Scenario


class Service:
    def __init__(self, plan: Plan, scenario: Scenario, log: EngineLog) -> None:
        self.plan, self.scenario, self.log, self.launch = plan, scenario, log, plan.launch
        self.engine = self.launch.engine
        self.ready = False
        self.started = time.time()
        self.counters = Counters()
        self.scheduler = Scheduler(plan.performance, plan.spec, plan.memory.kv_tokens, self.counters)
        if self.engine == "sglang":
            self.scheduler.on_admit = self._prefill_line
        self.generation = GenerationApi(
            self.scheduler, self.launch.served_name, self.launch.context_length, plan.garbled
        )

    # -- routing ------------------------------------------------------------------------------------

    async def handle(self, request: Request) -> Response | StreamResponse:
        method, path = request.method, request.path
        if method == "POST" and path == "/v1/chat/completions":
            return await self.generation.chat(self._body(request))
        if method == "POST" and path == "/v1/completions":
            return await self.generation.completions(self._body(request))
        if self.engine == "sglang" and method in ("POST", "PUT") and path == "/generate":
            return await self.generation.generate(self._body(request))
        if method != "GET" and not (path in ("/flush_cache", "/reset_prefix_cache") and method == "POST"):
            return Response.json({"detail": "Method Not Allowed"}, 405) if self._known(path) else self._missing()
        return self._get(path)

    def _body(self, request: Request) -> dict[str, Any]:
        body = request.json()
        if not isinstance(body, dict):
            raise BadRequest("request body must be a JSON object")
        model = body.get("model")
        if self.engine == "vllm" and model and model not in (self.launch.served_name, self.launch.model_path):
            raise BadRequest(f"The model `{model}` does not exist.")
        return body

    def _known(self, path: str) -> bool:
        return path in {"/v1/chat/completions", "/v1/completions", "/generate", "/health", "/v1/models"}

    @staticmethod
    def _missing() -> Response:
        return Response.json({"detail": "Not Found"}, 404)

    def _get(self, path: str) -> Response:
        if path in ("/health", "/health_generate"):
            return Response(200 if self.ready else 503, b"", "text/plain")
        if path == "/ping":
            return Response.text("pong" if self.engine == "sglang" else "")
        if path == "/v1/models":
            return Response.json(
                {
                    "object": "list",
                    "data": [
                        {
                            "id": self.launch.served_name,
                            "object": "model",
                            "created": int(self.started),
                            "owned_by": self.engine,
                            "root": self.launch.model_path,
                            "max_model_len": self.launch.context_length,
                        }
                    ],
                }
            )
        if path == "/metrics" and (self.engine == "vllm" or self.launch.enable_metrics):
            return Response.text(self.metrics_text(), content_type="text/plain; version=0.0.4; charset=utf-8")
        if path in ("/flush_cache", "/reset_prefix_cache"):
            return Response.text("Cache flushed.\n")
        if self.engine == "sglang" and path in ("/server_info", "/get_server_info"):
            return Response.json(self.server_info())
        if self.engine == "sglang" and path in ("/model_info", "/get_model_info"):
            return Response.json(self.model_info())
        if self.engine == "vllm" and path == "/version":
            return Response.json({"version": self.launch.version})
        if self.engine == "vllm" and path == "/load":
            return Response.json({"server_load": self.counters.running + self.counters.waiting})
        if self.engine == "vllm" and path == "/server_info":
            return Response.json(
                {
                    "vllm_config": {
                        "model": self.launch.model_path,
                        "tensor_parallel_size": self.launch.tp_size,
                        "speculative": self._spec_summary(),
                    }
                }
            )
        return self._missing()

    # -- documents ----------------------------------------------------------------------------------

    def _spec_summary(self) -> dict[str, Any] | None:
        spec = self.plan.spec
        if spec is None:
            return None
        return {
            "draft_model": spec.drafter.name,
            "num_steps": spec.steps,
            "num_draft_tokens": spec.draft_tokens,
        }

    def model_info(self) -> dict[str, Any]:
        model = self.scenario.model
        return {
            "model_path": self.launch.model_path,
            "tokenizer_path": self.launch.model_path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": model.model_type,
            "architectures": [model.architecture],
            "served_model_name": self.launch.served_name,
        }

    def server_info(self) -> dict[str, Any]:
        memory, launch = self.plan.memory, self.launch
        args = {flag.lstrip("-").replace("-", "_"): value for flag, value in launch.parsed.values.items()}
        args.update(
            {
                "attention_backend": launch.attention_backend,
                "mem_fraction_static": launch.memory_fraction,
                "tp_size": launch.tp_size,
                "max_running_requests": launch.max_running_requests,
            }
        )
        state: dict[str, Any] = {
            "last_gen_throughput": round(self.counters.gen_throughput, 3),
            "memory_usage": {
                "weight": round(memory.weights_mib / 1024, 2),
                "kvcache": round(memory.kv_mib / 1024, 2),
                "token_capacity": memory.kv_tokens,
                "graph": round(memory.graph_mib / 1024, 2),
            },
            "effective_max_running_requests_per_dp": launch.max_running_requests,
        }
        if self.plan.spec is not None:
            state["avg_spec_accept_length"] = round(self.counters.avg_accept_length(), 4)
        return {
            **args,
            "internal_states": [state],
            "version": launch.version,
            "launch_command": " ".join(launch.parsed.explicit),
        }

    def metrics_text(self) -> str:
        if self.engine == "sglang":
            spec = self.plan.spec
            modern = parse_version(self.launch.version) >= (0, 5, 23)
            return render_sglang(
                self.counters,
                self.launch.served_name,
                self.plan.memory.kv_tokens,
                spec is not None,
                self.launch.cuda_graph,
                spec.draft_tokens if spec else 0,
                modern,
            )
        return render_vllm(
            self.counters, self.launch.served_name, self.plan.memory.kv_tokens, self.plan.spec is not None
        )

    # -- logging ------------------------------------------------------------------------------------

    def _prefill_line(self, prompt_tokens: int) -> None:
        counters = self.counters
        usage = counters.used_tokens / max(1, self.plan.memory.kv_tokens)
        self.log.info(
            f"Prefill batch, #new-seq: 1, #new-token: {prompt_tokens}, #cached-token: 0, "
            f"token usage: {usage:.2f}, #running-req: {counters.running - 1}, "
            f"#queue-req: {counters.waiting}, "
        )

    def access_log(self, request: Request, status: int) -> None:
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 503: "Service Unavailable"}.get(status, "")
        line = f'INFO:     {request.peer} - "{request.method} {request.path} HTTP/1.1" {status} {reason}'
        if self.engine == "sglang":
            self.log.info(line, rank=None)
        else:
            self.log.write(f"(APIServer pid={self.log.pid}) {line}")

    async def log_stats(self) -> None:
        """Periodic lines: SGLang ``Decode batch`` every decode-log-interval steps; vLLM stats every 10 s."""
        counters = self.counters
        last_tokens, last_prompt, last_verify, last_accepted = 0, 0, 0, 0
        last_time = time.monotonic()
        vllm_period = float(os.environ.get("VLLM_LOG_STATS_INTERVAL", "10"))
        while True:
            if self.engine == "sglang":
                period = max(0.25, self.launch.decode_log_interval / max(1.0, self.scheduler.per_stream_rate()))
            else:
                period = max(0.25, vllm_period)
            await asyncio.sleep(min(1.0, period) if counters.running == 0 else period)
            now = time.monotonic()
            elapsed = max(1e-6, now - last_time)
            generated, prompted = (
                counters.generation_tokens - last_tokens,
                counters.prompt_tokens - last_prompt,
            )
            verify, accepted = counters.spec_verify_ct - last_verify, counters.spec_accepted - last_accepted
            counters.gen_throughput = generated / elapsed
            if verify:
                counters.window_accept_length = (accepted + verify) / verify
            if generated or counters.running:
                self._stats_line(generated / elapsed, prompted / elapsed, verify, accepted, elapsed)
            last_tokens, last_prompt = counters.generation_tokens, counters.prompt_tokens
            last_verify, last_accepted, last_time = counters.spec_verify_ct, counters.spec_accepted, now

    def _stats_line(self, gen_rate: float, prompt_rate: float, verify: int, accepted: int, elapsed: float) -> None:
        counters, spec = self.counters, self.plan.spec
        usage = counters.used_tokens / max(1, self.plan.memory.kv_tokens)
        if self.engine == "sglang":
            spec_text = ""
            if spec is not None and verify:
                spec_text = (
                    f"accept len: {(accepted + verify) / verify:.2f}, "
                    f"accept rate: {accepted / (verify * spec.steps):.2f}, "
                )
            self.log.info(
                f"Decode batch, #running-req: {counters.running}, #token: {counters.used_tokens}, "
                f"token usage: {usage:.2f}, {spec_text}cuda graph: {self.launch.cuda_graph}, "
                f"gen throughput (token/s): {gen_rate:.2f}, #queue-req: {counters.waiting}, "
            )
            return
        self.log.info(
            f"Engine 000: Avg prompt throughput: {prompt_rate:.1f} tokens/s, Avg generation throughput: "
            f"{gen_rate:.1f} tokens/s, Running: {counters.running} reqs, Waiting: {counters.waiting} reqs, "
            f"GPU KV cache usage: {100 * usage:.1f}%, Prefix cache hit rate: 0.0%",
            rank=None,
            where="loggers.py:123",
        )
        if spec is not None and verify:
            drafted = verify * spec.steps
            per_position = ", ".join(f"{spec.drafter.per_position ** (index + 1):.3f}" for index in range(spec.steps))
            self.log.info(
                f"SpecDecoding metrics: Mean acceptance length: {(accepted + verify) / verify:.2f}, "
                f"Accepted throughput: {accepted / elapsed:.2f} tokens/s, Drafted throughput: "
                f"{drafted / elapsed:.2f} tokens/s, Accepted: {accepted} tokens, Drafted: {drafted} tokens, "
                f"Per-position acceptance rate: {per_position}, Avg Draft acceptance rate: "
                f"{100 * accepted / drafted:.1f}%",
                rank=None,
                where="metrics.py:120",
            )
