"""What the root cause's structure says: the component that failed, the kind of failure, and the kind
of problem its message describes.

Each rule reads one property of the first real error, never the wording of one known log line:

- the innermost frames name a component whose failures have one remedy (CUDA graph capture,
  speculative decoding, the weight loader, the KV cache, NCCL, the engine's argument checks);
- a native crash in a component that explains it (CUDA graph capture, NCCL) is that component's; other
  crashes, kernel assertions and deaths are read by :mod:`tools.logs.crash_rules`;
- an attention kernel that fails is ``attention_backend_error`` unless its message is about the GPU
  generation (``unsupported_arch``); a just-in-time build of an attention kernel that fails is too;
- a weight the checkpoint lacks (``KeyError: 'layers.0.mlp.weight_scale'``) is ``model_load_error``
  (checkpoint and model disagree) unless it is a drafter's weight or one a drafter shares with its
  target (the embedding, the LM head);
- a tensor shape or size mismatch, or a drafter's missing weight, in a log whose engine runs
  speculative decoding (its configuration, or the failing stack passing through speculative code) is
  ``spec_decode_problem`` (draft and target disagree far more often than the target alone is broken),
  also when the drafter's CUDA graph was being captured: a shape mismatch is not what capture gets wrong;
- a model that cannot be found while the speculative configuration is built is the drafter:
  ``spec_decode_problem``, above the wording that names a missing model in general; so is an
  architecture the engine refuses when it is a drafter's (an EAGLE-3 drafter given to the EAGLE method);
- a check that refuses something on this GPU (its compute capability or generation named), or states the
  generation it requires, is ``unsupported_arch``, and one that refuses a parallelism setting (tensor, pipeline,
  data, expert parallelism), a value it lists the valid ones for, a size that does not divide another, or a value
  the operator gave is ``config_error``, whichever component raised it (the loader and the distributed layer often
  do); a refused KV-cache data type is the attention backend's (:mod:`tools.logs.refusals`);
- a kernel file for this GPU's generation that does not exist (a just-in-time library keeps one implementation per
  architecture) is ``unsupported_arch``;
- where the innermost component names no class, the component that ran it may (an attention backend
  building the cache pool it reads).
"""

from __future__ import annotations

import re

from tools.logs.components import INNERMOST_FRAMES, failing_component, frame_component
from tools.logs.crash_rules import crash_evidence, death_before_evidence, kernel_assertion_evidence
from tools.logs.events import ErrorEvent
from tools.logs.evidence import Evidence
from tools.logs.library import DiagnosisClass, SignatureLibrary
from tools.logs.phase import Phase, last_phase
from tools.logs.prefixes import split_line
from tools.logs.refusals import GPU_GENERATION, attention_backend_refusal, dimensions_disagree, refusal_kind
from tools.logs.window import LogWindow

COMPONENT_PRIORITY = 65
SPECIFIC_PRIORITY = 66  # a rule that reads the message as well as the frames
# A value the operator gave, refused: the argument is the remedy, above what the message says of the model's files.
GIVEN_SETTING_PRIORITY = 83
# Above the generic "weights do not match the model" signatures: with a drafter loaded, a mismatch is far
# more often the drafter's than the target's.
SPECULATIVE_MISMATCH_PRIORITY = 85
# Above the capture failure's own signatures (90): the capture only ran the drafter whose shapes disagree.
DRAFTER_CAPTURE_MISMATCH_PRIORITY = 91
# Above them too: a capture that failed because an attention kernel it needed could not be built is the backend's.
KERNEL_BUILD_PRIORITY = 91
HINT_PRIORITY = 4  # below an unexplained error (10) and far enough not to contest it
_PHASE_HINT: dict[str, tuple[DiagnosisClass, str]] = {
    "launch": ("config_error", "it failed right after launch, where the engine checks its arguments"),
    "distributed_init": ("nccl_error", "it failed during distributed (NCCL) initialisation"),
    "weights": ("model_load_error", "it failed while the weights were loading"),
    "weights_done": ("model_load_error", "it failed right after the weights were loaded"),
    "memory_profiling": ("cuda_oom", "it failed while memory was profiled and the KV cache sized"),
    "server": ("warmup_failed", "it failed once the HTTP server was up, during the warm-up"),
}
# Errors of code that calls a name its library does not have (two versions that disagree), not of a failure at run time.
_CODE_MISMATCH = re.compile(r"\b(?:Attribute|Name|Import|ModuleNotFound)Error$")
_CAPACITY = re.compile(
    r"memory|out of|exceed|larger than|not enough|available|no free|runs? out|too (?:small|large)", re.IGNORECASE
)
_NOT_SUPPORTED = re.compile(r"not supported|[Uu]nsupported|compute capability|architecture|\bsm_?\d+", re.IGNORECASE)
_KERNEL_BUILD = re.compile(r"ninja|nvcc|Error building extension|build\.ninja|JIT compil|failed to compile", re.I)
# Attention kernels by library or kernel name (a FlashInfer build is an attention one only when it builds
# prefill, decode or MLA kernels; FlashInfer also builds sampling and normalisation kernels).
_ATTENTION_KERNEL = re.compile(r"flash_?attn|flash.attention|xformers|attention|attn|fmha|mla|prefill|decode", re.I)
_MISMATCH = re.compile(
    r"size mismatch|shape mismatch|must match the (?:existing )?size|does(?: not|n't) match|cannot be multiplied"
    r"|is invalid for input of size|expanded size|mismatch(?:ed)? (?:in |between )?(?:shape|size|dim)",
    re.IGNORECASE,
)
_MODEL_MISSING = re.compile(
    r"Invalid repository ID or local directory|Repo id must|does not exist|[Nn]o such file|not found|[Cc]annot find"
    r"|[Cc]ould not (?:find|load)|is not a (?:local )?(?:folder|directory)"
)
# A layer of the model (a torch module) without a tensor the checkpoint or its quantization should have given it.
_LAYER_WITHOUT_WEIGHT = re.compile(
    r"'\w*(?:Linear|Embedding|MoE|Experts?|Attention|Norm|Layer|Head|Conv\w*)' object has no attribute "
    r"'(?P<attribute>\w*(?:weight|scale|bias|zero|qweight|qzeros|g_idx)\w*)'"
)
_WEIGHT_NAME = re.compile(r"^'?[\w.]+\.(?:weight|bias|\w*scale\w*)'?")
# An architecture the engine refuses ("Model architectures ['X'] are not supported"), and a drafter's among them.
_REFUSED_ARCHITECTURES = re.compile(r"[Aa]rchitectures? (?P<names>\[[^\]]{1,300}\]) (?:are|is) not supported")
_DRAFTER_ARCHITECTURE = re.compile(r"Eagle|Medusa|MTP|Draft|NextN|Speculator")
# Layers only a drafter's checkpoint has (EAGLE, MTP / NextN layers, a draft model; EAGLE-3 names its one decoder
# layer "midlayer"): missing from the model the engine built, they show a drafter loaded as (or through) another
# model even where no speculative setting shows. MTP and EAGLE heads also have layers of their own names: the
# norms of the embedding and hidden state they join and the projection that joins them (DeepSeek's enorm, hnorm and
# eh_proj; Qwen's pre_fc_norm_embedding and pre_fc_norm_hidden).
_DRAFTER_ONLY_WEIGHT = re.compile(r"eagle|mtp|nextn|draft|midlayer|pre_fc_norm|\b[eh]norm\b|eh_proj", re.IGNORECASE)
# A loader's list of the model's weights the checkpoint did not give.
_UNLOADED_WEIGHTS = re.compile(r"weights (?:were )?not (?:initiali[sz]ed|loaded)|[Mm]issing (?:keys|weights)")
# A weight that belongs to a drafter, or one a drafter shares with its target and often leaves out of its checkpoint
# (the embedding, the LM head).
_DRAFTER_WEIGHT = re.compile(rf"{_DRAFTER_ONLY_WEIGHT.pattern}|spec|embed_tokens|lm_head", re.IGNORECASE)
# Speculative decoding switched on: set in a configuration dump (SGLang's ServerArgs, vLLM's engine config
# print "=None" when it is off), given on the command line, or named in messages and module paths.
_SPECULATIVE_CONTEXT = re.compile(
    r"speculative_algorithm=['\"]?(?!None)[A-Za-z]|speculative_config['\"]?[=:] ?(?!None)[{'\"\w]"
    # "spec_decode" as a module (vllm/spec_decode/, spec_decode_worker), not a setting's name
    # (per_request_spec_decode_metrics='none' is in every vLLM 0.32 configuration dump).
    r"|--speculative[-_]|[Dd]rafter\b|[Dd]raft[ _-]?model(?![_\w]*['\"]?[=:] ?None)|\bspec_decode(?:/|_worker|\.)"
    r"|[Ss]peculative decoding|EAGLE-?3?\b(?!['\"]?[=:] ?None)|Eagle3?(?:ForCausalLM|Model|Head)|ForCausalLMEagle"
    r"|eagle\w*_proposer|num_speculative_tokens['\"]?[=:] ?\d"
)
_SPECULATIVE_SCAN_CHARS = 4 * 1024 * 1024
# The drafter's path as the engines print their settings (vLLM's speculative_config, SGLang's ServerArgs, the
# command line).
_DRAFTER_PATH = re.compile(
    r"'speculative_config': \{[^}]*?'model': '(?P<vllm>[^']+)'|speculative_draft_model_path='(?P<sglang>[^']+)'"
    r"|speculative_model='(?P<old>[^']+)'|--speculative[-_](?:draft[-_]model[-_]path|model)[= ](?P<flag>[^\s'\"]+)"
)
_ARGUMENT_LINES = 400  # the engines print their settings near the top of the log
_DRAFTER_PATH_LINES = 60  # before and after the root cause, where the engine names the file it could not use
_FILE_ERROR = re.compile(r"[Ee]rror|not a valid|not found|does not exist|[Nn]o such file|[Cc]annot|[Cc]ould not")
# A crash in native code is explained by the component only where that component runs native code
# that crashes for its own reasons; elsewhere (e.g. the weight loader) the crash is the runtime's.
_CRASH_COMPONENTS = ("cuda_graph", "distributed")
# A kernel's source or binary for this GPU's generation that is not there (a just-in-time library such as DeepGEMM
# keeps one implementation per architecture, "impls/sm121_fp8_mqa_logits.cuh"): the kernels lack this generation.
_ARCHITECTURE_KERNEL_MISSING = re.compile(
    r"(?:Failed to open|[Nn]o such file|not found|[Cc]annot open|[Cc]ould not open)\W.*?"
    r"\bsm_?\d{2,3}[a-z]?_\w*\.(?:cuh|cu|hpp|h|cubin|ptx)\b"
)
_SHAPE_REFUSED = re.compile(r"for this shape|[Ss]upported (?:\w+ )?shapes|head[_ ]?(?:dim|size)")
_COMPONENT_CLASS: dict[str, tuple[DiagnosisClass, float]] = {
    "cuda_graph": ("cuda_graph_capture_failure", 0.75),
    "speculative": ("spec_decode_problem", 0.75),
    "weight_loader": ("model_load_error", 0.7),
    "model_config": ("model_load_error", 0.65),
    "tokenizer": ("model_load_error", 0.7),
    "engine_args": ("config_error", 0.7),
    "kv_cache": ("cuda_oom", 0.65),
    "distributed": ("nccl_error", 0.65),
    "warmup": ("warmup_failed", 0.65),
}


def _stated(root: ErrorEvent, window: LogWindow) -> str:
    """What the failing check says: the exception's message, or for a bare ``AssertionError`` the ``assert``
    statement that Python prints under the innermost frame."""
    if root.message or not (root.type or "").endswith("AssertionError") or not root.frames:
        return root.message
    after = root.frames[0].index + 1
    source = split_line(window.lines[after]).text.strip() if 0 < after < len(window.lines) else ""
    return source if source.startswith("assert ") else ""


def _read_broadcast_queue(root: ErrorEvent) -> bool:
    """The failing call read vLLM's shared-memory broadcast queue (the engine waiting for its workers)."""
    return any("shm_broadcast" in frame.path for frame in root.frames)


def _component_class(root: ErrorEvent, component: str | None, stated: str) -> tuple[DiagnosisClass, float] | None:
    if root.kind == "crash":
        if component == "attention" and "Abort" in root.message:
            # An abort after a failed check (a CUDA error the kernel reported), not a host-side segfault.
            return ("attention_backend_error", 0.7)
        return _COMPONENT_CLASS[component] if component in _CRASH_COMPONENTS else None
    if component == "quantization" and _NOT_SUPPORTED.search(root.message):
        return ("unsupported_arch", 0.7)
    if component == "attention":
        # A kernel missing for this shape is the backend's, even on a GPU generation the message names.
        generation = GPU_GENERATION.search(root.message) and not _SHAPE_REFUSED.search(root.message)
        return ("unsupported_arch", 0.7) if generation else ("attention_backend_error", 0.7)
    if component == "kv_cache" and stated and not _CAPACITY.search(stated):
        return None  # an error in the cache code that is not about its size
    if component == "distributed" and (root.type or "").endswith("TimeoutError") and _read_broadcast_queue(root):
        return ("nccl_hang", 0.7)  # vLLM's own no-progress watchdog: the workers took nothing for its whole timeout
    if component == "distributed" and root.type is not None and _CODE_MISMATCH.search(root.type):
        return None  # code calling the distributed layer with a name it lacks: versions disagree, no collective ran
    return _COMPONENT_CLASS.get(component or "")


def _outer_component(root: ErrorEvent, innermost: str | None) -> str | None:
    """The next component out from the innermost one, among the innermost frames: the code that ran the failing
    code (an attention backend building the cache pool it reads, a loader running a model's code)."""
    if innermost is None:
        return None
    for frame in root.frames[1:INNERMOST_FRAMES]:
        component = frame_component(frame)
        if component is not None and component != innermost:
            return component
    return None


def _kernel_build_failure(root: ErrorEvent) -> bool:
    """A just-in-time build (ninja, nvcc, a torch extension) of an attention kernel failed."""
    if not _KERNEL_BUILD.search(root.message):
        return False
    named = root.message + " " + " ".join(frame.path for frame in root.frames)
    return bool(_ATTENTION_KERNEL.search(named))


def _custom_all_reduce(root: ErrorEvent) -> bool:
    """The engine's own all-reduce kernels (vLLM's csrc/custom_all_reduce, SGLang's sgl-kernel copy)."""
    return any("custom_all_reduce" in frame.path for frame in root.frames)


def _mismatch(root: ErrorEvent) -> bool:
    """A tensor shape or size mismatch, or a weight the model does not have (``KeyError: 'x.weight'``)."""
    if root.type is not None and root.type.endswith("KeyError"):
        return bool(_WEIGHT_NAME.match(root.message.strip()))
    return bool(_MISMATCH.search(root.message))


def _through_speculative(root: ErrorEvent) -> bool:
    """The failing stack passes through speculative decoding's code (the drafter's worker or runner)."""
    return any(frame_component(frame) == "speculative" for frame in root.frames)


def _missing_weight(root: ErrorEvent) -> str | None:
    """The weight's name of a ``KeyError: 'x.weight'`` root cause, else None."""
    if root.type is None or not root.type.endswith("KeyError"):
        return None
    match = _WEIGHT_NAME.match(root.message.strip())
    return match.group(0) if match else None


def _layer_without_weight(root: ErrorEvent) -> str | None:
    """The attribute's name when a model layer lacks a weight, scale or quantization tensor
    (``AttributeError: 'ColumnParallelLinear' object has no attribute 'input_scale'``), else None."""
    if root.type is None or not root.type.endswith("AttributeError"):
        return None
    match = _LAYER_WITHOUT_WEIGHT.search(root.message)
    return match.group("attribute") if match else None


def _drafter_file_failed(root: ErrorEvent, window: LogWindow) -> bool:
    """An error around the root cause names the drafter's path: the file the engine could not use is the drafter's."""
    head = "\n".join(window.lines[:_ARGUMENT_LINES])
    paths = {path.rstrip("/") for match in _DRAFTER_PATH.finditer(head) for path in match.groups() if path}
    if not paths:
        return False
    around = window.lines[max(root.first_index - _DRAFTER_PATH_LINES, 0) : root.index + _DRAFTER_PATH_LINES]
    # The settings' own lines name the path too (and may hold words such as 'error' as values): not a failure.
    failures = [line for line in around if _FILE_ERROR.search(line) and not _DRAFTER_PATH.search(line)]
    return any(path in line for line in failures for path in paths)


def speculative_in_use(window: LogWindow) -> bool:
    """The log shows speculative decoding configured or running (its head, bounded, and its tail)."""
    text = window.text
    if len(text) > 2 * _SPECULATIVE_SCAN_CHARS:
        text = text[:_SPECULATIVE_SCAN_CHARS] + text[-_SPECULATIVE_SCAN_CHARS:]
    return _SPECULATIVE_CONTEXT.search(text) is not None


def phase_lead(phase: Phase) -> tuple[DiagnosisClass, str] | None:
    """The class a failure in this start-up phase most often has, and why (None where none stands out)."""
    return _PHASE_HINT.get(phase)


def hint_evidence(root: ErrorEvent, phase: Phase, library: SignatureLibrary) -> list[Evidence]:
    """Weak leads for an error no rule explains: what the start-up phase it failed in, or its exception,
    usually means. They never decide the class (their priority is below that of an unexplained error);
    they become the alternatives of an ``unknown`` diagnosis."""
    lead = phase_lead(phase)
    leads: list[tuple[DiagnosisClass, str]] = [lead] if lead is not None else []
    if root.type is not None and root.type.endswith("KeyError") and _WEIGHT_NAME.match(root.message.strip()):
        leads.append(("model_load_error", "the checkpoint and the model disagree on a weight's name"))
    return [
        Evidence(
            "hint",
            diagnosis_class,
            HINT_PRIORITY,
            0.3,
            root.index,
            why,
            list(library.class_remedies.get(diagnosis_class, [])),
        )
        for diagnosis_class, why in leads
    ]


def root_evidence(root: ErrorEvent | None, window: LogWindow, library: SignatureLibrary) -> list[Evidence]:
    """The classes the root cause's structure points at (none when it says nothing specific)."""
    if root is None:
        return []
    found: list[Evidence] = []
    component = failing_component(root.frames)

    def add(diagnosis_class: DiagnosisClass, priority: int, confidence: float, why: str) -> None:
        remedies = list(library.class_remedies.get(diagnosis_class, []))
        found.append(Evidence("component", diagnosis_class, priority, confidence, root.index, why, remedies))

    stated = _stated(root, window)
    mapped = _component_class(root, component, stated)
    if mapped is not None:
        add(mapped[0], COMPONENT_PRIORITY, mapped[1], f"the root cause's innermost frames are in {component}")
    elif root.kind != "crash" and (outer := _outer_component(root, component)) is not None:
        outer_class = _component_class(root, outer, stated)
        if outer_class is not None:
            why = f"the failure in {component} code was raised while {outer} code ran it"
            add(outer_class[0], COMPONENT_PRIORITY - 1, outer_class[1], why)
    if root.kind == "crash" and mapped is None:
        found += crash_evidence(root, window, library, component)
    found += kernel_assertion_evidence(root, library, _through_speculative(root) or speculative_in_use(window))
    if root.kind == "crash" and _custom_all_reduce(root) and last_phase(window, library).phase == "cuda_graph":
        # Its checks after start-up are in the exchange of the captured graphs' buffers, when capture ends.
        add(
            "cuda_graph_capture_failure",
            SPECIFIC_PRIORITY,
            0.7,
            "the custom all-reduce failed while CUDA graphs were captured (it registers their buffers then)",
        )
    found += death_before_evidence(root, window, library)
    if root.kind != "crash" and _ARCHITECTURE_KERNEL_MISSING.search(root.message):
        add("unsupported_arch", SPECIFIC_PRIORITY, 0.7, "the kernel written for this GPU's generation does not exist")
    refusal = refusal_kind(root, window, component)
    if refusal == "gpu_generation":
        add("unsupported_arch", SPECIFIC_PRIORITY, 0.7, "a check refused something on this GPU's generation")
    elif refusal == "setting":
        add("config_error", SPECIFIC_PRIORITY, 0.7, "a check refused a setting's value (an option to change)")
    elif refusal == "given_setting":
        add("config_error", GIVEN_SETTING_PRIORITY, 0.75, "a check refused a value the operator gave as an argument")
    if root.kind != "crash" and dimensions_disagree(root.message):
        add(
            "model_load_error",
            SPECIFIC_PRIORITY,
            0.7,
            "two of the model's own dimensions do not divide (its configuration)",
        )
    if root.kind != "crash" and _kernel_build_failure(root):
        why = "the just-in-time build of an attention kernel failed"
        add("attention_backend_error", KERNEL_BUILD_PRIORITY, 0.75, why)
    if refusal is None and root.kind != "crash" and attention_backend_refusal(root):
        add(
            "attention_backend_error",
            SPECIFIC_PRIORITY,
            0.7,
            "the attention backend cannot serve this KV-cache data type or this model's use of it",
        )
    if component == "speculative" and _MODEL_MISSING.search(root.message):
        add(
            "spec_decode_problem",
            SPECULATIVE_MISMATCH_PRIORITY,
            0.8,
            "a model that cannot be found while the speculative configuration is built: the drafter's path",
        )
    if _drafter_file_failed(root, window):
        why = "the file the engine could not use is the drafter's (its path is the speculative configuration's model)"
        add("spec_decode_problem", SPECULATIVE_MISMATCH_PRIORITY, 0.75, why)
    refused_architectures = _REFUSED_ARCHITECTURES.search(root.message)
    if refused_architectures is not None and _DRAFTER_ARCHITECTURE.search(refused_architectures.group("names")):
        add(
            "spec_decode_problem",
            SPECULATIVE_MISMATCH_PRIORITY,
            0.75,
            "the architecture the engine does not accept is a drafter's: the speculative method and drafter disagree",
        )
    unloaded = _UNLOADED_WEIGHTS.search(root.message)
    if unloaded is not None and _DRAFTER_ONLY_WEIGHT.search(root.message[unloaded.end() :]):
        add(
            "spec_decode_problem",
            SPECULATIVE_MISMATCH_PRIORITY,
            0.7,
            "the weights the checkpoint did not give include a drafter's own layers (its checkpoint or its loading)",
        )
    missing_weight = _missing_weight(root) or _layer_without_weight(root)
    speculative = _through_speculative(root) or speculative_in_use(window)
    # The embedding and the LM head are the drafter's only where a drafter runs; otherwise the model's own.
    shared = missing_weight is not None and not _DRAFTER_ONLY_WEIGHT.search(missing_weight) and not speculative
    if missing_weight is not None and (shared or not _DRAFTER_WEIGHT.search(missing_weight)):
        add(
            "model_load_error",
            SPECIFIC_PRIORITY,
            0.7,
            "the checkpoint has no weight of this name for the model the engine built (checkpoint and model disagree)",
        )
    elif (
        component != "speculative"
        and _mismatch(root)
        and (speculative or (missing_weight is not None and _DRAFTER_ONLY_WEIGHT.search(missing_weight) is not None))
    ):
        drafter_capture = component == "cuda_graph" and _through_speculative(root)
        add(
            "spec_decode_problem",
            DRAFTER_CAPTURE_MISMATCH_PRIORITY if drafter_capture else SPECULATIVE_MISMATCH_PRIORITY,
            0.7,
            "a shape or weight mismatch while the engine runs speculative decoding (draft and target disagree)",
        )
    return found
