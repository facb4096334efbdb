"""What a check that refuses something says about the remedy: this GPU's generation (``unsupported_arch``), a
setting's value (``config_error``), or what the attention backend cannot do (``attention_backend_error``),
whichever component raised it.

A value is a setting to change when the check names a parallelism setting, lists the values it accepts, finds a
size that does not divide another, or quotes a value the operator gave as an argument (the engines print their
arguments near the top of the log).
"""

from __future__ import annotations

import re
from typing import Literal

from tools.logs.events import ErrorEvent
from tools.logs.window import LogWindow

# What a refusal names: this GPU's generation, a setting's value, or a value the operator gave as an argument.
RefusalKind = Literal["gpu_generation", "setting", "given_setting"]

GPU_GENERATION = re.compile(
    r"compute capability|architecture|\bsm[_ ]?(?:[<>=]+ ?)?\d+|Ampere|Hopper|Turing|Volta|Blackwell|Ada\b|this GPU"
    r"|\bgfx\d{3,4}\b|GPUs? (?:is|are) not supported|device is not supported"
    # Ascend's NPU generations (an Atlas 300I Duo is a 310P, an A2 server a 910B)
    r"|\b(?:310[PB]|910[BC]\d?)\b|\bAscend ?\d{3}",
    re.IGNORECASE,
)
# A parallelism setting the model, its quantization or the engine refuses: an option to change, not a broken model.
_PARALLEL_SETTING = re.compile(
    r"\b(?:with|for|under|and) (?:TP|PP|DP|EP)\b|\b(?:tensor|pipeline|data|expert|context|sequence)[ _-]?parallel", re.I
)
# A size check: the parallel size (or a block or batch size) does not divide the model's dimensions. Whichever
# code checks it (often the distributed layer splitting the model), it is the setting to change.
_DIVISIBILITY = re.compile(r"\b(?:is not|must be|should be) (?:evenly )?divisible by\b")
# Two of the model's own dimensions that do not divide (3 KV heads for 4 attention heads): the checkpoint's
# configuration is inconsistent, whatever the engine's settings.
_DIMENSION = r"(?:num_(?:attention_|key_value_|kv_)?heads|hidden_size|head_(?:dim|size)|intermediate_size|num_experts)"
_DIMENSIONS_DISAGREE = re.compile(
    rf"\b{_DIMENSION}\W*(?:\(\d+\)|\d+)? (?:is not|must be|should be) (?:evenly )?divisible by {_DIMENSION}\b"
)
# A GPU generation by name: its compute capability, NVIDIA's SM or AMD's gfx number, an architecture's name (not
# "architecture" itself, which also names a model's architecture).
_GENERATION_NAMED = (
    r"compute capability|\bsm[_ ]?\d{2,3}[a-z]?\b|\bgfx\d{3,4}\b|\b[CR]DNA ?\d\b|Ampere|Hopper|Turing|Volta|Blackwell"
)
# The GPU itself named: its generation, or this GPU as such.
_GPU_NAMED = re.compile(
    rf"{_GENERATION_NAMED}|this GPU|GPUs? (?:is|are) not supported|device is not supported", re.IGNORECASE
)
# A check that states the GPU generation it requires ("mla_gluon requires gfx950 (CDNA4), got gfx942").
_GPU_REQUIRED = re.compile(rf"\brequires?\b.{{0,80}}?(?:{_GENERATION_NAMED})", re.IGNORECASE)
# A check that lists the values it accepts: the value given is an option to change.
_VALID_CHOICES = re.compile(
    r"[Vv]alid (?:options|choices|values|backends) (?:are|is|include)|must be one of|[Cc]hoose (?:one )?from"
    r"|[Pp]ossible (?:values|choices)"
)
_REFUSED = re.compile(r"not (?:yet )?supported|unsupported|does(?: not|n't) support|cannot be used", re.I)
# What a refusal suggests instead ("..., please use trtllm on blackwell or flash attention on earlier GPUs"): a GPU
# generation named there is where the alternative runs, not what was refused.
_SUGGESTION = re.compile(
    r"[,;.]\s*(?:please |try |consider )?(?:use|switch to|try) (?!of\b)\S.*$", re.IGNORECASE | re.DOTALL
)
_INVALID = re.compile(r"\b(?:[Ii]nvalid|[Uu]nknown|[Uu]nrecognized|not a valid)\b")
_QUOTED = re.compile(r"[`'\"]([^`'\"\s]{1,100})[`'\"]")
# A refused value named after a colon ("Unknown quantization method: bitsandbytes.").
_NAMED_VALUE = re.compile(
    r"\b(?:[Uu]nknown|[Ii]nvalid|[Uu]nsupported|[Uu]nrecognized) [\w -]{1,40}?: ?([\w-]+(?:\.[\w-]+)*)"
)
# A package the code needs and lacks ("xxhash is required for the 'xxhash' ...", "pip install x").
_PACKAGE_NEEDED = re.compile(r"\bis required\b|\bpip install\b|\bis not installed\b")
_MODULE_MISSING = re.compile(r"No module named '(?P<name>[\w.]+)'")
# The engines print the arguments they were given near the top of the log.
_ARGUMENT_DUMP = re.compile(r"non-default args: \{|server_args=ServerArgs\(|[Aa]rgs: Namespace\(")
_ARGUMENT_DUMP_LINES = 400
_KV_CACHE_DTYPE = re.compile(
    r"(?:kv[ _-]?cache|KV cache)\W{0,3}(?:dtype|data ?type)|(?:dtype|data ?type) (?:of|for) (?:the )?kv[ _-]?cache",
    re.I,
)
_BACKEND_LACKS = re.compile(r"'\w*(?:Attn|Attention)\w*(?:Backend|Impl)\w*' object has no attribute")


def refusal_kind(root: ErrorEvent, window: LogWindow, component: str | None) -> RefusalKind | None:
    """What a check that refuses something names: this GPU (its compute capability or generation), a setting's
    value (a parallelism setting, a value refused with the list of valid ones, a size that does not divide
    another), or a value the operator gave as an argument (unless speculative decoding's own checks refused it:
    the drafter's setup is then what failed; or the attention backend refused a KV-cache data type). None for a
    crash or another error."""
    if root.kind == "crash":
        return None
    message = root.message
    refused = _REFUSED.search(message) is not None
    refusal = _SUGGESTION.sub("", message)
    if (refused and _GPU_NAMED.search(refusal)) or _GPU_REQUIRED.search(refusal):
        return "gpu_generation"
    parallel = refused and _PARALLEL_SETTING.search(message) and not GPU_GENERATION.search(message)
    divisibility = _DIVISIBILITY.search(message) and not _DIMENSIONS_DISAGREE.search(message)
    if parallel or _VALID_CHOICES.search(message) or divisibility:
        return "setting"
    if component == "speculative" or attention_backend_refusal(root):
        return None
    return "given_setting" if _given_value_refused(message, window) else None


def _given_value_refused(message: str, window: LogWindow) -> bool:
    """The message refuses a value it quotes or names after a colon, lacks a package for a value it quotes, or
    cannot import a module it names, and the engine's dump of its arguments (vLLM's "non-default args", SGLang's
    ServerArgs) shows the operator gave that value (or a dotted path into that module: a middleware, a plugin) as
    an argument."""
    module = _MODULE_MISSING.search(message)
    if module is not None:
        given = [f"'{module.group('name')}'", f"'{module.group('name')}."]
    elif _REFUSED.search(message) or _INVALID.search(message) or _PACKAGE_NEEDED.search(message):
        # A quoted path is a file the check could not use (the model's, a drafter's): not a setting's value.
        values = [*_QUOTED.findall(message), *_NAMED_VALUE.findall(message)]
        given = [f"'{value}'" for value in values if value.strip() and "/" not in value]
    else:
        return False
    # As a value in the dump ("'key': 'value'", "key='value'", "['value'"), not as an argument's name.
    as_values = [re.compile(rf"[:=\[,] ?{re.escape(value)}(?!\s*:)") for value in given]
    for line in window.lines[:_ARGUMENT_DUMP_LINES] if given else []:
        if _ARGUMENT_DUMP.search(line) and any(value.search(line) for value in as_values):
            return True
    return False


def dimensions_disagree(message: str) -> bool:
    """Two of the model's own dimensions that do not divide, as the message names them."""
    return _DIMENSIONS_DISAGREE.search(message) is not None


def attention_backend_refusal(root: ErrorEvent) -> bool:
    """The KV cache's data type refused, or an attention backend object lacking what the model's code asks of it."""
    message = root.message
    if _KV_CACHE_DTYPE.search(message) and _REFUSED.search(message):
        return True
    return root.type is not None and root.type.endswith("AttributeError") and bool(_BACKEND_LACKS.match(message))
