"""The start-up lines of each engine, phase by phase (SGLang 0.5.8 ``srt/model_executor/model_runner.py``
and ``srt/entrypoints/http_server.py``; vLLM 0.33 ``entrypoints/``)."""

from __future__ import annotations

import socket
from abc import ABC, abstractmethod
from collections.abc import Mapping

from engine_facts.milestones import fill, fill_labeled, template_for
from twin.engine.flags import pretended_flags
from twin.engine.logs import EngineLog
from twin.engine.plan import Plan
from twin.scenario import Scenario


def _gb(mib: float) -> float:
    return mib / 1024


class StartupText(ABC):
    """Common facts both engines print; subclasses choose the wording, one method per moment."""

    def __init__(self, log: EngineLog, plan: Plan, scenario: Scenario) -> None:
        self.log, self.plan, self.scenario, self.launch = log, plan, scenario, plan.launch
        self.total = plan.memory.total_mib
        self.release = pretended_flags(self.launch.engine, self.launch.version).version

    def wording(self, milestone: str, containing: str, labels: Mapping[str, object], fallback: str) -> str:
        """The pretended release's own line for a milestone (from the release data), else ``fallback``."""
        template = template_for(self.launch.engine, self.release, milestone, containing)
        return fill_labeled(template, labels) if template else fallback

    def nccl_lines(self, env_p2p_disabled: bool, rank: int) -> None:
        """``NCCL_DEBUG=INFO`` transport lines: P2P between GPUs unless ``NCCL_P2P_DISABLE=1`` (then SHM)."""
        world = self.launch.tp_size
        if world < 2:
            return
        host = socket.gethostname() if self.scenario.host.hostname == "sim-host" else self.scenario.host.hostname
        transport = "SHM/direct/direct" if env_p2p_disabled else "P2P/CUMEM"
        peer = (rank + 1) % world
        pid = self.log.pid + rank  # one process per rank in the real engine
        self.log.write(
            f"{host}:{pid}:{pid} [{rank}] NCCL INFO Channel 00/0 : {rank}[{rank}] -> {peer}[{peer}] via {transport}"
        )

    @abstractmethod
    def args(self) -> None: ...

    @abstractmethod
    def init_begin(self, rank: int) -> None: ...

    @abstractmethod
    def custom_all_reduce(self) -> None: ...

    @abstractmethod
    def init_end(self, rank: int) -> None: ...

    @abstractmethod
    def load_begin(self, draft: bool = False) -> None: ...

    @abstractmethod
    def progress(self, line: str) -> None: ...

    @abstractmethod
    def load_end(self, draft: bool = False) -> None: ...

    @abstractmethod
    def kv_cache(self) -> None: ...

    @abstractmethod
    def graph_begin(self, draft: bool = False) -> None: ...

    @abstractmethod
    def graph_end(self, seconds: float, draft: bool = False) -> None: ...

    @abstractmethod
    def summary(self) -> None: ...

    @abstractmethod
    def server_listening(self, host: str, port: int) -> None: ...

    @abstractmethod
    def warmup(self) -> None: ...

    @abstractmethod
    def ready(self) -> None: ...


class SglangText(StartupText):
    def args(self) -> None:
        launch = self.launch
        fields = {
            "model_path": launch.model_path,
            "tp_size": launch.tp_size,
            "port": launch.port,
            "mem_fraction_static": launch.memory_fraction,
            "attention_backend": launch.attention_backend,
            "disable_cuda_graph": not launch.cuda_graph,
            "cuda_graph_max_bs": launch.cuda_graph_max_bs,
            "speculative_algorithm": launch.speculative.algorithm if launch.speculative else None,
            "max_running_requests": launch.max_running_requests if launch.max_running_explicit else None,
        }
        text = ", ".join(f"{key}={value!r}" for key, value in fields.items())
        self.log.info(f"server_args=ServerArgs({text})", rank=None)
        if launch.attention_defaulted:
            self.log.info(
                f"Attention backend not specified. Use {launch.attention_backend} backend by default.",
                rank=None,
            )

    def init_begin(self, rank: int) -> None:
        self.log.info(self.wording("distributed_init", "begin", {}, "Init torch distributed begin."), rank=rank)

    def custom_all_reduce(self) -> None:
        self.log.info(
            "Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs. "
            "To silence this warning, specify disable_custom_all_reduce=True explicitly."
        )

    def init_end(self, rank: int) -> None:
        line = self.wording(
            "distributed_init_done",
            "",
            {"mem usage": "0.51", "elapsed": "2.31"},
            "Init torch distributed ends. mem usage=0.51 GB",
        )
        self.log.info(line, rank=rank)

    def load_begin(self, draft: bool = False) -> None:
        self.log.info(
            f"Load weight begin. avail mem="
            f"{_gb(self.total - 520 - (self.plan.memory.weights_mib if draft else 0)):.2f} GB"
        )

    def progress(self, line: str) -> None:
        self.log.write(line)

    def load_end(self, draft: bool = False) -> None:
        memory = self.plan.memory
        used = memory.draft_mib if draft else memory.weights_mib
        kind = "LlamaForCausalLMEagle3" if draft else self.scenario.model.architecture
        avail = self.total - 520 - memory.weights_mib - (memory.draft_mib if draft else 0)
        self.log.info(
            f"Load weight end. type={kind}, dtype=torch.bfloat16, avail mem={_gb(avail):.2f} GB, "
            f"mem usage={_gb(used):.2f} GB."
        )

    def _after_kv(self) -> float:
        memory = self.plan.memory
        return self.total - 520 - memory.weights_mib - memory.draft_mib - memory.kv_mib

    def kv_cache(self) -> None:
        memory = self.plan.memory
        mla = self.scenario.model.attention == "mla"
        if mla:
            sizes = f"KV size: {_gb(memory.kv_mib):.2f} GB"
        else:
            sizes = f"K size: {_gb(memory.kv_mib) / 2:.2f} GB, V size: {_gb(memory.kv_mib) / 2:.2f} GB"
        labels = {
            "": "KV Cache",
            "dtype": "torch.bfloat16",
            "#tokens": memory.kv_tokens,
            "KV size": f"{_gb(memory.kv_mib):.2f}",
            "K size": f"{_gb(memory.kv_mib) / 2:.2f}",
            "V size": f"{_gb(memory.kv_mib) / 2:.2f}",
        }
        template = template_for(self.launch.engine, self.release, "kv_cache", "KV size" if mla else "K size")
        # 0.5.18+ builds the phrase in one field ("{cache_name} {'is allocated'}"): print it as it reads.
        line = (
            fill_labeled(template.replace("{} {}.", "KV Cache is allocated."), labels)
            if template
            else (f"KV Cache is allocated. #tokens: {memory.kv_tokens}, {sizes}")
        )
        self.log.info(line)
        self.log.info(f"Memory pool end. avail mem={_gb(self._after_kv()):.2f} GB")

    def _graph_line(self, moment: str, labels: Mapping[str, object], fallback: str, draft: bool) -> str:
        """The release's main-model graph line (0.5.14+: ``Capture decode CUDA graph ...``), else ``fallback``."""
        if draft:
            return fallback
        milestone = f"cuda_graph_{moment}"
        for containing, name in (
            (f"Capture {{}} CUDA graph {moment}. ", "decode"),
            (f"Capture {{}} {moment}. ", "cuda graph"),
        ):
            template = template_for(self.launch.engine, self.release, milestone, containing)
            if template:
                return fill_labeled(template, {"Capture": name, **labels})
        return fallback

    def graph_begin(self, draft: bool = False) -> None:
        name = "draft cuda graph" if draft else "cuda graph"
        avail = f"{_gb(self._after_kv()):.2f}"
        fallback = f"Capture {name} begin. This can take up to several minutes. avail mem={avail} GB"
        labels = {"backend": "full", "num_tokens": self.launch.cuda_graph_max_bs, "avail mem": avail}
        self.log.info(self._graph_line("begin", labels, fallback, draft))

    def graph_end(self, seconds: float, draft: bool = False) -> None:
        name = "draft cuda graph" if draft else "cuda graph"
        graph = self.plan.memory.graph_mib
        usage, avail = f"{_gb(graph):.2f}", f"{_gb(self._after_kv() - graph):.2f}"
        fallback = f"Capture {name} end. Time elapsed: {seconds:.2f} s. mem usage={usage} GB. avail mem={avail} GB."
        labels = {"Time elapsed": f"{seconds:.2f}", "elapsed": f"{seconds:.2f}", "mem usage": usage, "avail mem": avail}
        self.log.info(self._graph_line("end", labels, fallback, draft))

    def summary(self) -> None:
        launch = self.launch
        self.log.info(
            f"max_total_num_tokens={self.plan.memory.kv_tokens}, chunked_prefill_size="
            f"{launch.chunked_prefill_size}, max_prefill_tokens=16384, max_running_requests="
            f"{launch.max_running_requests}, context_len={launch.context_length}, available_gpu_mem="
            f"{_gb(self._after_kv() - self.plan.memory.graph_mib):.2f} GB"
        )

    def server_listening(self, host: str, port: int) -> None:
        for line in (
            f"INFO:     Started server process [{self.log.pid}]",
            "INFO:     Waiting for application startup.",
            "INFO:     Application startup complete.",
            f"INFO:     Uvicorn running on http://{host}:{port} (Press CTRL+C to quit)",
        ):
            self.log.info(line, rank=None)

    def warmup(self) -> None:
        self.log.info('INFO:     127.0.0.1:40112 - "GET /get_model_info HTTP/1.1" 200 OK', rank=None)
        self.log.info(
            "Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, "
            "#running-req: 0, #queue-req: 0, "
        )
        self.log.info('INFO:     127.0.0.1:40118 - "POST /generate HTTP/1.1" 200 OK', rank=None)

    def ready(self) -> None:
        self.log.info("The server is fired up and ready to roll!", rank=None)


class VllmText(StartupText):
    def _api(self, message: str, where: str = "api_server.py:1896") -> None:
        self.log.info(message, rank=None, where=where)

    def _core(self, message: str, where: str = "core.py:93") -> None:
        self.log.info(message, rank=None, where=where, process="EngineCore_DP0")

    def args(self) -> None:
        launch = self.launch
        self._api(f"vLLM API server version {launch.version}")
        chosen = {
            flag.lstrip("-").replace("-", "_"): launch.parsed.values[flag] for flag in sorted(launch.parsed.explicit)
        }
        self._api(f"non-default args: {chosen}", "utils.py:233")
        self._api(f"Resolved architecture: {self.scenario.model.architecture}", "model.py:547")
        spec = launch.speculative
        spec_text = (
            f"SpeculativeConfig(method='{spec.algorithm.lower()}', model='{spec.draft_path}', "
            f"num_spec_tokens={spec.steps})"
            if spec
            else "None"
        )
        self._core(
            f"Initializing a V1 LLM engine (v{launch.version}) with config: model='{launch.model_path}', "
            f"speculative_config={spec_text}, tensor_parallel_size={launch.tp_size}, "
            f"enforce_eager={not launch.cuda_graph}"
        )

    def init_begin(self, rank: int) -> None:
        world = self.launch.tp_size
        fallback = (
            f"rank {rank} in world size {world} is assigned as DP rank 0, PP rank 0, TP rank {rank}, EP rank {rank}"
        )
        labels = {
            "rank": rank,
            "world size": world,
            "DP rank": 0,
            "PP rank": 0,
            "PCP rank": 0,
            "TP rank": rank,
            "ETP rank": rank,
            "EP rank": rank,
        }
        self.log.info(
            self.wording("distributed_init", "is assigned as", labels, fallback),
            rank=rank,
            where="parallel_state.py:1208",
        )

    def custom_all_reduce(self) -> None:
        self.log.warning(
            "Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs. "
            "To silence this warning, specify disable_custom_all_reduce=True explicitly.",
            where="custom_all_reduce.py:272",
        )

    def init_end(self, rank: int) -> None:
        return None

    def load_begin(self, draft: bool = False) -> None:
        if draft:
            self.log.info("Loading drafter model...", where="eagle.py:980")
            return
        self.log.info(f"Starting to load model {self.launch.model_path}...", where="gpu_model_runner.py:2602")
        self.log.info(
            f"Using {self.launch.attention_backend} attention backend out of potential backends: "
            f"['{self.launch.attention_backend}']",
            where="cuda.py:390",
        )

    def progress(self, line: str) -> None:
        self.log.write(f"(Worker_TP0 pid={self.log.pid}) {line}")

    def load_end(self, draft: bool = False) -> None:
        memory = self.plan.memory
        used = memory.draft_mib if draft else memory.weights_mib
        self.log.info(f"Model loading took {_gb(used):.4f} GiB", where="gpu_model_runner.py:2653")

    def kv_cache(self) -> None:
        memory = self.plan.memory
        self._core(f"Available KV cache memory: {_gb(memory.kv_mib):.2f} GiB", "gpu_worker.py:298")
        self._core(f"GPU KV cache size: {memory.kv_tokens:,} tokens", "kv_cache_utils.py:1087")
        self._core(
            f"Maximum concurrency for {self.launch.context_length:,} tokens per request: "
            f"{memory.kv_tokens / self.launch.context_length:.2f}x",
            "kv_cache_utils.py:1091",
        )

    def graph_begin(self, draft: bool = False) -> None:
        return None

    def graph_end(self, seconds: float, draft: bool = False) -> None:
        if draft:
            return
        self.progress(
            f"Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 67/67 "
            f"[00:{min(int(seconds), 59):02d}<00:00, 2.21it/s]"
        )
        self.log.info(
            f"Graph capturing finished in {seconds:.0f} secs, took {_gb(self.plan.memory.graph_mib):.2f} GiB",
            where="gpu_model_runner.py:3480",
        )

    def summary(self) -> None:
        self._core("init engine (profile, create kv cache, warmup model) took 12.03 seconds", "core.py:210")

    def server_listening(self, host: str, port: int) -> None:
        template = template_for("vllm", self.release, "ready", "Starting vLLM") or "Starting vLLM server on %s"
        url = f"http://{host}:{port}"
        values: tuple[object, ...] = (url,)
        if "://" in template:
            values = ("", host, port)
        elif "%d on" in template:
            values = (0, url)
        self._api(fill(template, *values), "api_server.py:1971")
        self._api("Available routes are:", "launcher.py:188")
        for route, methods in (
            ("/health", "GET"),
            ("/v1/models", "GET"),
            ("/v1/chat/completions", "POST"),
            ("/v1/completions", "POST"),
            ("/metrics", "GET"),
        ):
            self._api(f"Route: {route}, Methods: {methods}", "launcher.py:196")
        for line in (
            f"Started server process [{self.log.pid}]",
            "Waiting for application startup.",
            "Application startup complete.",
        ):
            self.log.write(f"(APIServer pid={self.log.pid}) INFO:     {line}")

    def warmup(self) -> None:
        return None

    def ready(self) -> None:
        return None
