"""The real vLLM runs whose logs are kept in ``tests/data/real_vllm/``: how each one is provoked and what it is.

Each case names the diagnosis class a correct reading of its log gives, in the vocabulary of
``tools/logs/library.py``. Where that vocabulary has no exact class (a rejected configuration, host
memory on a CPU deployment), the note says which class stands in and what the remedy really is.
Models: ``target`` is the tiny test model, ``drafter`` its random EAGLE-3 drafter; other names are
broken copies made by :mod:`support.capture_real_vllm` (see ``VARIANTS`` there), ``missing`` a path
that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Action = Literal[
    "start",  # expect the server to exit on its own
    "serve",  # reach ready, answer a chat and a streamed completion, keep the log as it stands
    "serve_load",  # as serve, then load it for LOAD_SECONDS so the periodic stats lines appear
    "stop_sigterm",  # reach ready, then SIGTERM the server (a graceful stop)
    "kill_worker",  # reach ready, then SIGKILL the VLLM::Worker process
    "kill_engine_core",  # reach ready, then SIGKILL the VLLM::EngineCore process
    "kill_server",  # reach ready, then SIGKILL the API server itself
    "hold_port",  # a listening socket holds the port before the server starts
]
EAGLE3 = '{"method": "eagle3", "model": "{drafter}", "num_speculative_tokens": 3}'  # {name}: a model path
NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}'


@dataclass(frozen=True)
class Case:
    id: str
    provoked: str
    expected_class: str
    key_pattern: str  # the first log line matching this is the case's key line
    action: Action = "start"
    model: str = "target"
    arguments: tuple[str, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)
    entry: Literal["module", "console"] = "module"
    note: str = ""


CASES: list[Case] = [
    Case("healthy-start", "start the tiny model; send one chat request and one streamed completion", "healthy",
         r"Application startup complete", action="serve", arguments=("--max-model-len", "1024")),
    Case("healthy-enforce-eager", "start with --enforce-eager (no torch.compile warm-up)", "healthy",
         r"Application startup complete", action="serve", arguments=("--max-model-len", "1024", "--enforce-eager")),
    Case("graceful-stop-sigterm", "start, then SIGTERM the API server", "healthy", r"Shutting down",
         action="stop_sigterm", arguments=("--max-model-len", "1024"),
         note="No failure in the log: a caller that knows the process exited must report it stopped, "
              "never healthy (issue 12, item 5)."),
    Case("ngram-healthy", "n-gram speculation under load for a while", "healthy", r"SpecDecoding metrics",
         action="serve_load", arguments=("--max-model-len", "1024", "--speculative-config", NGRAM),
         environment={"VLLM_LOG_STATS_INTERVAL": "5"}),
    Case("eagle3-ready", "EAGLE-3 with the random drafter, ready, one request", "healthy",
         r"Application startup complete", action="serve",
         arguments=("--max-model-len", "1024", "--speculative-config", EAGLE3)),
    Case("eagle3-random-drafter-load", "EAGLE-3 with the random drafter under load", "spec_decode_problem",
         r"SpecDecoding metrics", action="serve_load",
         arguments=("--max-model-len", "1024", "--speculative-config", EAGLE3),
         environment={"VLLM_LOG_STATS_INTERVAL": "5"},
         note="The engine is healthy; the drafter accepts nothing (mean acceptance length 1.00), which the "
              "project calls spec_decode_problem."),
    Case("port-in-use", "another process listens on the port before the server starts", "port_in_use",
         r"Address already in use", action="hold_port", arguments=("--max-model-len", "1024")),
    Case("bind-address-unavailable", "--host set to an address this machine does not have", "unknown",
         r"Cannot assign requested address", arguments=("--max-model-len", "1024", "--host", "203.0.113.7"),
         note="The later --host wins over the harness's 127.0.0.1."),
    Case("model-dir-missing", "--model names a directory that does not exist", "model_load_error",
         r"HFValidationError: Repo id must be in the form", model="missing"),
    Case("model-path-is-file", "--model names a file (config.json), not a directory", "model_load_error",
         r"Invalid repository ID or local directory specified", model="config-file"),
    Case("max-model-len-too-large", "--max-model-len 4096 for a model built for 2048", "unknown",
         r"User-specified max_model_len \(4096\) is greater than the derived", arguments=("--max-model-len", "4096"),
         note="The vocabulary has no class for a rejected configuration; the remedy is a smaller "
              "--max-model-len (lower_context_length)."),
    Case("kv-cache-larger-than-ram", "VLLM_CPU_KVCACHE_SPACE=64 on a 24 GiB machine", "cuda_oom",
         r"less than requested memory for kv", arguments=("--max-model-len", "1024"),
         environment={"VLLM_CPU_KVCACHE_SPACE": "64"},
         note="Host memory, not GPU memory: cuda_oom is the vocabulary's memory class; the remedy is a "
              "smaller VLLM_CPU_KVCACHE_SPACE, not --gpu-memory-utilization."),
    Case("kv-cache-space-not-integer", "VLLM_CPU_KVCACHE_SPACE=0.5 (the engine reads an integer)", "unknown",
         r"invalid literal for int", arguments=("--max-model-len", "1024"),
         environment={"VLLM_CPU_KVCACHE_SPACE": "0.5"}),
    Case("cpu-memory-utilization-too-high", "no VLLM_CPU_KVCACHE_SPACE and --gpu-memory-utilization 0.99",
         "cuda_oom", r"less than desired CPU memory utilization",
         arguments=("--max-model-len", "1024", "--gpu-memory-utilization", "0.99"),
         environment={"VLLM_CPU_KVCACHE_SPACE": ""},
         note="On the CPU the flag is the fraction of host RAM; the remedy is VLLM_CPU_KVCACHE_SPACE or a "
              "lower fraction."),
    Case("worker-sigkill-after-ready", "SIGKILL the VLLM::Worker process after ready", "process_killed",
         r"died unexpectedly", action="kill_worker", arguments=("--max-model-len", "1024"),
         note="The API server then exits with code 0."),
    Case("engine-core-sigkill-after-ready", "SIGKILL the VLLM::EngineCore process after ready", "process_killed",
         r"engine core exited unexpectedly|EngineDeadError", action="kill_engine_core",
         arguments=("--max-model-len", "1024")),
    Case("api-server-sigkill-after-ready", "SIGKILL the API server process after ready", "process_killed",
         r"Application startup complete", action="kill_server", arguments=("--max-model-len", "1024"),
         note="The log just stops; only the exit status (-9) tells."),
    Case("console-script-vllm-serve", "the `vllm serve` console script of the vllm-cpu distribution", "unknown",
         r"PackageNotFoundError: No package metadata was found for vllm", entry="console",
         arguments=("--max-model-len", "1024"),
         note="A broken install, not a broken model: the module entry point works."),
    Case("dtype-invalid-choice", "--dtype float8", "unknown", r"error: argument --dtype",
         arguments=("--dtype", "float8")),
    Case("dtype-float16", "--dtype float16 on the CPU", "healthy", r"Casting torch.bfloat16 to torch.float16",
         action="serve", arguments=("--max-model-len", "1024", "--dtype", "float16")),
    Case("unrecognized-flag", "a flag this release does not have", "unknown", r"unrecognized arguments",
         arguments=("--max-model-len", "1024", "--cuda-graph-max-bs", "8")),
    Case("quantization-not-in-checkpoint", "--quantization awq for an unquantized checkpoint", "model_load_error",
         r"Cannot find the config file for awq", arguments=("--max-model-len", "1024", "--quantization", "awq")),
    Case("quantization-method-unknown", "config.json names quantization method 'mystery'", "model_load_error",
         r"Unknown quantization method: mystery", model="unknown-quantization"),
    Case("speculative-method-unknown", "--speculative-config with method 'mystery'", "spec_decode_problem",
         r"Input should be 'ngram'",
         arguments=(
            "--max-model-len",
            "1024",
            "--speculative-config",
            '{"method": "mystery", "num_speculative_tokens": 3}',
        )),
    Case("speculative-eagle3-without-model", "--speculative-config eagle3 with no drafter path",
         "spec_decode_problem", r"num_speculative_tokens was provided but without speculative model",
         arguments=(
            "--max-model-len",
            "1024",
            "--speculative-config",
            '{"method": "eagle3", "num_speculative_tokens": 3}',
        )),
    Case("speculative-config-not-json", "--speculative-config that is not JSON", "unknown",
         r"error: argument --speculative-config",
         arguments=("--max-model-len", "1024", "--speculative-config", "{method: ngram}")),
    Case("drafter-dir-missing", "EAGLE-3 drafter path that does not exist", "spec_decode_problem",
         r"Invalid repository ID or local directory specified",
         arguments=("--max-model-len", "1024", "--speculative-config", EAGLE3.replace("{drafter}", "{missing}"))),
    Case("drafter-hidden-size-mismatch", "EAGLE-3 drafter with hidden size 128 for a 256 target",
         "spec_decode_problem", r"Tried to load weights of size",
         arguments=(
            "--max-model-len",
            "1024",
            "--speculative-config",
            EAGLE3.replace("{drafter}", "{drafter-hidden-128}"),
        )),
    Case("tokenizer-missing", "model directory without tokenizer files", "model_load_error",
         r"Couldn't instantiate the backend tokenizer", model="no-tokenizer", arguments=("--max-model-len", "1024")),
    Case("weights-missing", "model directory without *.safetensors", "model_load_error",
         r"RuntimeError: Cannot find any model weights", model="no-weights", arguments=("--max-model-len", "1024")),
    Case("weights-truncated", "model.safetensors cut to half its size", "model_load_error",
         r"SafetensorError: Error while deserializing header", model="truncated-weights",
         arguments=("--max-model-len", "1024")),
    Case("architecture-unknown", "config.json architectures ['MysteryForCausalLM'] (model_type llama)",
         "model_load_error", r"Model architectures \['MysteryForCausalLM'\] are not supported",
         model="unknown-architecture", arguments=("--max-model-len", "1024")),
    Case("model-type-unknown", "config.json model_type 'mystery' that transformers does not know",
         "model_load_error", r"Transformers does not recognize this architecture", model="unknown-model-type",
         arguments=("--max-model-len", "1024")),
    Case("needs-trust-remote-code", "config.json with auto_map to code in the model directory", "model_load_error",
         r"Please pass the argument `trust_remote_code=True`", model="remote-code",
         arguments=("--max-model-len", "1024")),
    Case("hub-id-offline", "--model names a hub repository id with HF_HUB_OFFLINE=1", "model_load_error",
         r"LocalEntryNotFoundError", model="hub-id", arguments=("--max-model-len", "1024")),
    Case("tensor-parallel-size-zero", "--tensor-parallel-size 0", "unknown",
         r"Input should be greater than or equal to 1",
         arguments=("--max-model-len", "1024", "--tensor-parallel-size", "0")),
    Case("tensor-parallel-larger-than-cores", "--tensor-parallel-size 4 on a 2-core machine", "unknown",
         r"Not enough allowed NUMA nodes to bind threads",
         arguments=("--max-model-len", "1024", "--tensor-parallel-size", "4"),
         note="On the CPU each tensor-parallel rank needs its own NUMA node; the remedy is --tensor-parallel-size 1."),
]
