"""Word families of engine failures: what a word is about, so that new wording shares features with old.

A log the classifier has never seen rarely repeats a known message, but it speaks of the same
things: memory, the GPU generation, the engine's arguments, the model's files, CUDA graphs, the
drafter, the ranks and their collectives, a signal, an HTTP answer. Each family lists words (as
written; they are normalised like log text when the table is built) and phrases (several words in a
row). :func:`concepts` names the families a list of normalised words mentions. The families describe
the domain, not any one log line; the learned model finds out from the corpus which class each
family points at.
"""

from __future__ import annotations

import functools

from tools.logs.wording import words

_FAMILIES: dict[str, str] = {
    "memory": "memory oom allocate allocation gib mib kv cache blocks pool mem free capacity utilization exhausted "
    "insufficient available tokens fraction swap enough",
    "gpu_generation": "capability sm arch ampere hopper blackwell turing volta ada t4 v100 p100 a100 h100 h200 h20 "
    "b200 gb200 rocm hip gfx fp8e4nv bf16 bfloat16 ptx image",
    "arguments": "argument arguments option options flag invalid choice choices unrecognized divisible allowed "
    "exclusive expected required requires parse parser combination mutually incompatible specify",
    "model_files": "config json tokenizer checkpoint safetensors weights weight repository repo directory file path "
    "huggingface hub download gguf vocab revision trust_remote_code folder architectures",
    "cuda_graph": "graph graphs capture capturing cudagraph replay",
    "speculative": "draft drafter eagle eagle3 speculative spec mtp medusa proposer acceptance verify",
    "collective": "nccl hccl rank ranks collective allreduce all_reduce allgather all_gather broadcast watchdog socket "
    "bootstrap p2p rendezvous tcpstore barrier gloo c10d ProcessGroupNCCL",
    "signal": "killed kill sigkill signal segfault segmentation fault dumped abort aborted died terminated sigsegv "
    "sigabrt sigbus",
    "http": "http proxy status response request connection refused html warmup curl",
    "socket_address": "address port bind eaddrinuse",
    "attention_kernel": "attention attn flash flashinfer flash_attn fa3 fa2 xformers headdim head_dim head_size "
    "heads backend fmha mla",
    "compiler": "ninja nvcc compile compilation compiler triton inductor dynamo jit build",
    "quantization": "quantization quant fp8 int4 int8 awq gptq marlin fp4 nvfp4 mxfp4 scale",
}
_PHRASES: dict[str, list[str]] = {
    "memory": ["out of memory", "not enough", "larger than"],
    "socket_address": ["already in use"],
    "gpu_generation": ["compute capability", "kernel image"],
    "arguments": ["must be", "cannot be used", "not a valid", "is not valid"],
    "signal": ["core dumped", "exit code", "unexpectedly"],
}


@functools.cache
def _tables() -> tuple[dict[str, set[str]], dict[tuple[str, ...], str]]:
    single: dict[str, set[str]] = {}
    for family, listed in _FAMILIES.items():
        for word in listed.split():
            for normalised in words(word):
                single.setdefault(normalised, set()).add(family)
    phrases = {tuple(words(phrase)): family for family, listed in _PHRASES.items() for phrase in listed}
    return single, phrases


def concepts(normalised: list[str]) -> set[str]:
    """The families these normalised words (in their order) mention."""
    single, phrases = _tables()
    found: set[str] = set()
    for word in normalised:
        found.update(single.get(word, ()))
    for phrase, family in phrases.items():
        width = len(phrase)
        if any(tuple(normalised[start : start + width]) == phrase for start in range(len(normalised) - width + 1)):
            found.add(family)
    return found
