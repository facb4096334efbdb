"""The hidden-state preparation command, spelled the way the checkout's script accepts it.

``scripts/prepare_hidden_states.py`` lives in the SpecForge checkout (the wheel leaves ``scripts/`` out) and
its flags changed between revisions: EAGLE-3's auxiliary layers were asked for with
``--enable-aux-hidden-states`` (to 2026-07-13), then given as ``--capture-layers`` (2026-07-14 to 07-20),
then derived from ``--draft-model-config`` with ``--strategy eagle3`` (from 2026-07-21). So the flags are
read from the installed script itself: its ``--help``, run with SpecForge's interpreter (which also proves
that the script's imports work there), cached under ``STATE/cache/`` by interpreter, script and the
script's sha256. Each choice is kept with its reason, as the engine flag builders do.

The command runs under torchrun as ``<python> -m torch.distributed.run``, one process per GPU of the
target's tensor parallelism, so it uses the same environment as the other stages.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from pydantic import BaseModel, Field

from tools.base import ToolContext
from tools.drafter.arguments import TrainDrafterArgs
from tools.drafter.gpu_room import GpuRoom
from tools.private_files import write_private

SCRIPT = "prepare_hidden_states.py"
_FLAG = re.compile(r"(?<![\w-])--[a-z0-9][a-z0-9-]*")
_DIGEST = "import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], 'rb').read()).hexdigest())"
NEEDED = ("--target-model-path", "--data-path", "--output-path")


class ScriptUnusable(Exception):
    """The checkout's preparation script cannot be run or cannot prepare EAGLE-3 features; says why."""


class PrepareCommand(BaseModel):
    argv: list[str]
    output_path: str
    choices: list[str] = Field(default_factory=list, description="Each flag chosen (or left out) and why")


def script_path(specforge_dir: str) -> str:
    return str(Path(specforge_dir) / "scripts" / SCRIPT)


def accepted_flags(context: ToolContext, python: str, script: str) -> set[str]:
    """The long options the installed script accepts (from its ``--help``, cached)."""
    digest = context.host.run([python, "-c", _DIGEST, script], timeout=60)
    if digest.exit_code != 0:
        lines = (digest.stderr or digest.stdout).strip().splitlines()
        raise ScriptUnusable(f"cannot read {script}: {lines[-1] if lines else f'exit {digest.exit_code}'}")
    key = hashlib.sha256(f"{python}\0{script}\0{digest.stdout.strip()}".encode()).hexdigest()[:16]
    cache = context.state_dir / "cache" / f"specforge-prepare-help-{key}.json"
    try:
        return set(json.loads(cache.read_text(encoding="utf-8"))["flags"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    result = context.host.run([python, script, "--help"], timeout=600)
    if result.exit_code != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        why = "timed out" if result.timed_out else lines[-1][:300] if lines else f"exit {result.exit_code}"
        raise ScriptUnusable(f"{python} {script} --help failed: {why}")
    flags = set(_FLAG.findall(result.stdout))
    cache.parent.mkdir(parents=True, exist_ok=True)
    document = {"python": python, "script": script, "flags": sorted(flags)}
    write_private(cache, (json.dumps(document) + "\n").encode("utf-8"))
    return flags


def _layer_ids(draft_config: str | None) -> str | None:
    """EAGLE-3 capture layers from the draft config (``eagle_config.eagle_aux_hidden_state_layer_ids``)."""
    try:
        config = json.loads(Path(str(draft_config)).read_text(encoding="utf-8"))
        ids = config["eagle_config"]["eagle_aux_hidden_state_layer_ids"]
        return ",".join(str(int(layer)) for layer in ids)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _capture(args: TrainDrafterArgs, flags: set[str]) -> tuple[list[str], str]:
    """How this revision is told to capture EAGLE-3's auxiliary hidden states."""
    layers = _layer_ids(args.draft_model_config)
    if "--strategy" in flags and "--draft-model-config" in flags:
        return (
            ["--strategy", "eagle3", "--draft-model-config", str(args.draft_model_config)],
            "--strategy eagle3 --draft-model-config: this revision takes the capture layers and the draft "
            "vocabulary from the draft config",
        )
    if "--capture-layers" in flags:
        extra = ["--capture-layers", layers] if layers else []
        return extra, (
            f"--capture-layers {layers}: this revision takes the layers directly (from the draft config)"
            if layers
            else "--capture-layers left out: the draft config names no layers, the script's default applies"
        )
    if "--enable-aux-hidden-states" in flags:
        extra = ["--enable-aux-hidden-states"]
        if layers and "--aux-hidden-states-layers" in flags:
            extra += ["--aux-hidden-states-layers", layers]
        return extra, (
            "--enable-aux-hidden-states: this revision stores EAGLE-3's auxiliary states only when asked"
            + (f" (layers {layers} from the draft config)" if len(extra) > 1 else "")
        )
    raise ScriptUnusable(
        "the script has none of --strategy/--draft-model-config, --capture-layers or --enable-aux-hidden-states: "
        "it cannot prepare EAGLE-3 features"
    )


def sglang_mla_backend(compute_capability: str) -> str:
    """SGLang's own attention backend for an MLA model on this GPU (0.5.8 ``server_args.py``: fa3 on Hopper,
    flashinfer on SM100, triton elsewhere). The script's ``--sglang-attention-backend`` default, flashinfer,
    overrides that choice, and FlashInfer's MLA prefill runs only where SGLang would pick it."""
    major = compute_capability.split(".")[0]
    return "fa3" if compute_capability == "9.0" else "flashinfer" if major == "10" else "triton"


def _attention(args: TrainDrafterArgs, gpu: str | None, mla: bool) -> tuple[str | None, str]:
    if args.prepare_attention_backend:
        return args.prepare_attention_backend, "given (a backend that works on these GPUs)"
    if mla and gpu:
        return sglang_mla_backend(gpu), f"SGLang's own choice for an MLA model on SM {gpu} (the script's default, "
        "flashinfer, would override it)"
    return None, ""


def build_command(
    args: TrainDrafterArgs,
    python: str,
    flags: set[str],
    data_path: str,
    output_path: str,
    room: GpuRoom,
    gpu: tuple[str | None, bool] = (None, False),
) -> PrepareCommand:
    """The torchrun command line for the checkout's preparation script, with the reason for each choice.
    ``gpu`` is the GPUs' compute capability and whether the target uses MLA (for the attention backend)."""
    script = script_path(str(args.specforge_dir))
    missing = [flag for flag in NEEDED if flag not in flags]
    if missing:
        raise ScriptUnusable(f"{script} does not accept {', '.join(missing)}")
    processes = args.target_tp_size
    argv = [python, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}", script]
    argv += ["--target-model-path", args.target_model_path, "--data-path", data_path, "--output-path", output_path]
    choices = [f"torchrun with {processes} processes: one per GPU of the target at TP {args.target_tp_size}"]
    capture, why = _capture(args, flags)
    argv += capture
    choices.append(why)
    backend, backend_reason = _attention(args, *gpu)
    optional: list[tuple[str, object, str]] = [
        ("--tp-size", args.target_tp_size, "the target's tensor parallelism"),
        ("--max-length", args.max_length, "as in training (data.max_length)"),
        ("--chat-template", args.chat_template, "as in training (data.chat_template)"),
        ("--batch-size", args.prepare_batch_size, "given"),
        ("--sglang-mem-fraction-static", room.fraction, room.reason),
        ("--sglang-attention-backend", backend, backend_reason),
    ]
    for flag, value, reason in optional:
        if value is None:
            continue
        if flag in flags:
            text = f"{value:.2f}" if isinstance(value, float) else str(value)
            argv += [flag, text]
            choices.append(f"{flag} {text}: {reason}")
        else:
            choices.append(f"{flag} left out: this revision of the script does not accept it")
    if args.trust_remote_code:
        if "--trust-remote-code" in flags:
            argv.append("--trust-remote-code")
        else:
            choices.append("--trust-remote-code left out: this revision of the script does not accept it")
    return PrepareCommand(argv=argv, output_path=output_path, choices=choices)
