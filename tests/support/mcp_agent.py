"""A scripted MCP client playing the coding agent: it brings a model up through `agent mcp`'s tools alone.

It follows the bring_up prompt's method and decides only from what the tools return: the probe's
models and SpecForge inputs, the readiness verdict and diagnosis of each launch (applying the first
remedy that sets a flag or an environment variable), the benchmark figures and the drafter's status.
Every engine gets a free port, so another engine on the machine never collides with it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from mcp import Client

from support.mcp_client import structured, text_of
from support.sim import free_port

MAX_ATTEMPTS = 6
MAX_WAITS, WAIT_SECONDS = 3, 60.0
MANAGED_LOCAL = {"deployment": {"disaggregated": {"managed_local": {"trainer_cuda_visible_devices": ["0"]}}}}
SINGLE = {"concurrency": [1], "num_prompts": 2}
LOADED = {"concurrency": [8, 32], "num_prompts": 32}
LENGTHS = {"input_len": 128, "output_len": 32, "correctness_probe": False}


@dataclass
class Bring:
    client: Client
    served: str = ""
    base: dict[str, Any] = field(default_factory=dict)
    engines: int = 0
    live: str | None = None  # the engine serving now
    host_url: str = ""  # the last ready engine's URL on its host
    server: str = ""  # the serving engine's host:port on its host
    single_stream: dict[str, float] = field(default_factory=dict)  # configuration -> single-stream tok/s
    attempts: list[str] = field(default_factory=list)

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return structured(await self.client.call_tool(tool, arguments))

    async def note(self, summary: str, evidence: list[str] | None = None) -> None:
        await self.call("update_state", {"findings": [{"summary": summary, "evidence": evidence or []}]})

    async def launch(self, config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Launch, remedying one diagnosed failure at a time; returns the ready engine's URL and configuration."""
        for _ in range(MAX_ATTEMPTS):
            if self.live:
                await self.call("stop_engine", {"name": self.live})
                self.live = None
            self.engines += 1
            config["port"] = free_port()
            arguments = {"config": config, "name": f"engine-{self.engines}", "poll_seconds": 0.2}
            output = await self.call("launch_engine", {**arguments, "health_every_seconds": 0.5})
            self.live, readiness = output["name"], output["readiness"]
            for _ in range(MAX_WAITS):  # still starting when the launch's wait ran out (a slow, loaded host): watch on
                if readiness["outcome"] != "timeout":
                    break
                status = await self.call("engine_status", {"name": self.live, "wait_ready_seconds": WAIT_SECONDS})
                output = {**output, **{key: status[key] for key in ("base_url", "host_base_url")}}
                readiness = status["readiness"] or readiness
            if readiness["outcome"] == "ready":
                self.attempts.append(f"{output['name']}: ready")
                self.host_url = str(output["host_base_url"] or output["base_url"])  # as the host itself sees it
                return str(output["base_url"]), config
            # The verdict's diagnosis saw how the start went (quiet for how long); a fresh read adds the log's end.
            read_again = await self.call("diagnose_log", {"process": output["name"]})
            diagnosis = readiness.get("diagnosis") or read_again
            action = next(
                (
                    item["action"]
                    for item in diagnosis["remedies"]
                    if item["action"].get("set_env") or item["action"].get("set_flag")
                ),
                None,
            )
            if action is None:  # a bare StopIteration would surface as a RuntimeError that names nothing
                raise AssertionError(
                    f"{output['name']}: {readiness['outcome']} ({diagnosis['class']}: {diagnosis['key_line']!r}) "
                    f"has no flag or environment remedy; attempts so far: {self.attempts}"
                )
            config = copy.deepcopy(config)
            config.setdefault("env", {}).update(action.get("set_env") or {})
            for key, value in (action.get("set_flag") or {}).items():
                *parents, leaf = key.split(".")
                node = config
                for parent in parents:
                    node = node.setdefault(parent, {})
                node[leaf] = value
            self.attempts.append(f"{output['name']}: {readiness['outcome']} ({diagnosis['class']}), then {action}")
            await self.note(f"{output['name']} {readiness['outcome']}: {diagnosis['class']}", [diagnosis["key_line"]])
        raise AssertionError(f"no ready engine after {MAX_ATTEMPTS} attempts: {self.attempts}")

    async def measure(self, name: str, config: dict[str, Any]) -> dict[str, Any]:
        """Launch ``config``, check it, benchmark it; returns the configuration that became ready."""
        base_url, config = await self.launch(config)
        verdict = await self.call("check_correctness", {"base_url": base_url, "model": self.served})
        assert verdict["verdict"]["passed"], verdict
        common = {"base_url": base_url, "model": self.served, **LENGTHS}
        single = await self.call("run_bench", {**common, **SINGLE, "label": f"{name} single-stream"})
        await self.call("run_bench", {**common, **LOADED, "label": f"{name} loaded"})
        self.single_stream[name] = single["levels"][0]["output_tok_per_s"]
        await self.note(f"{name}: single-stream {self.single_stream[name]:.1f} tok/s")
        self.server = self.host_url.removeprefix("http://")  # SpecForge runs on the host
        return config

    def speculative(self, drafter: str) -> dict[str, Any]:
        config = copy.deepcopy(self.base)
        config["speculative"] = {"draft_model_path": drafter, "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}
        config["max_running_requests"] = 64
        return config

    async def train(self, environment: dict[str, Any], target: dict[str, Any]) -> str:
        arguments = {
            "name": "drafter-1",
            "target_model_path": target["path"],
            "target_server": self.server,
            "served_model_name": self.served,
            "specforge_dir": environment["specforge_dir"],
            "draft_model_config": environment["specforge_draft_configs"][0],
            "input_data_path": environment["specforge_datasets"][0],
            "num_samples": 48,
            "num_epochs": 8,
        }
        refused = await self.client.call_tool("train_drafter", arguments)
        # Online training as SpecForge 0.2.0 runs it needs, on a host without Mooncake and a capture-enabled
        # target, a managed_local deployment; the refusal names it (and the offline route). SpecForge's own
        # environment is the one the probe found in the checkout. The agent retries with managed_local.
        assert refused.is_error and "mooncake:" in text_of(refused) and "managed_local" in text_of(refused)
        await self.note("train_drafter refused: SpecForge prerequisites", [text_of(refused)[:500]])
        arguments["specforge_python"] = environment["specforge_python"]
        arguments["extra_config"] = MANAGED_LOCAL
        await self.call("train_drafter", arguments)
        for _ in range(600):
            status = await self.call("drafter_status", {"name": "drafter-1"})
            if status["state"] == "done":
                return str(status["exported_path"])
            assert status["state"] in ("starting", "running"), status
            await self.call("wait", {"seconds": 0.5, "reason": "drafter training"})
        raise AssertionError("the drafter did not finish training")


async def bring_up(client: Client) -> str:
    """Drive the bring-up to done; returns the summary given to finish_run."""
    prompt = await client.get_prompt("bring_up", {"model": "Kimi-K2.5-INT4", "engine": "sglang"})
    assert "probe_system" in text_of_prompt(prompt)
    bring = Bring(client)
    environment = (await bring.call("probe_system", {}))["environment"]
    target = next(model for model in environment["models"] if model["role"] == "target")
    drafter = next(model for model in environment["models"] if model["role"] == "drafter")
    bring.served = target["name"]
    bring.base = {
        "engine": "sglang",
        "model_path": target["path"],
        "served_model_name": target["name"],
        "tp_size": len(environment["gpus"]),
        "trust_remote_code": True,
        "enable_metrics": True,
    }
    await bring.call("update_state", {"tasks": [{"id": "bring-up", "title": f"Bring up {target['name']}"}]})
    bring.base = await bring.measure("baseline", copy.deepcopy(bring.base))
    await bring.measure("off-the-shelf", bring.speculative(drafter["path"]))
    trained = await bring.train(environment, target)
    await bring.measure("trained", bring.speculative(trained))
    kept = max(bring.single_stream, key=lambda name: bring.single_stream[name])
    if kept != "trained":
        await bring.launch(bring.speculative(drafter["path"]) if kept == "off-the-shelf" else copy.deepcopy(bring.base))
    figures = ", ".join(f"{name} {value:.1f} tok/s" for name, value in bring.single_stream.items())
    summary = (
        f"Serving {bring.served} with sglang ({bring.live}).\n"
        f"Single-stream output: {figures}.\n"
        f"Kept: {kept} (the fastest single-stream configuration).\n"
        f"Launch attempts: {'; '.join(bring.attempts)}"
    )
    done = await client.call_tool("finish_run", {"summary": summary})
    assert not done.is_error, text_of(done)
    return summary


def text_of_prompt(prompt: Any) -> str:
    return "\n".join(getattr(message.content, "text", "") for message in prompt.messages)
