"""The models the real vLLM cases run against: the test model, its drafter, and broken copies of them; and the
replacement of this machine's paths by neutral ones in what is kept."""

from __future__ import annotations

import json
import shutil
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import cast

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
    _tensor_variants(copy)
    _config_value_variants(copy, edit_config)
    _file_set_variants(copy)
    _template_and_config_variants(copy, edit_config)
    _weights_layout_variants(copy)
    _blind_variants(copy, edit_config)
    (root / "model-symlink-loop").symlink_to(root / "model-symlink-loop")  # resolving it never ends
    drafter = root / "drafter-no-weights"
    shutil.copytree(engine.drafter, drafter)
    (drafter / "model.safetensors").unlink()
    drafter = root / "drafter-config-corrupt"
    shutil.copytree(engine.drafter, drafter)
    config = drafter / "config.json"
    config.write_text(config.read_text()[: config.stat().st_size // 2])  # cut mid-object: not valid JSON
    shutil.copytree(engine.drafter, root / "drafter-weights-truncated")
    weights = root / "drafter-weights-truncated" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    return {
        "target": str(engine.model),
        "drafter": str(engine.drafter),
        "missing": str(root / "missing-model"),
        "config-file": str(engine.model / "config.json"),
        "hub-id": "example-org/tiny-llama-not-here",
        "model-symlink-loop": str(root / "model-symlink-loop"),
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
    """Copies whose config names float64 weights or a RoPE scaling type no one knows, or whose tokenizer.json is an
    empty JSON object."""
    edit_config(copy("config-dtype-float64"), torch_dtype="float64", dtype="float64")
    edit_config(copy("rope-scaling-unknown"), rope_scaling={"rope_type": "mystery", "factor": 2.0})
    (copy("tokenizer-json-empty-object") / "tokenizer.json").write_text("{}")


def _config_value_variants(copy: Callable[[str], Path], edit_config: Callable[..., None]) -> None:
    """Copies whose config names a vocabulary larger than the embedding rows, int8 weights, or 128 positions, or
    whose special_tokens_map.json is cut in half."""
    edit_config(copy("vocab-size-mismatch"), vocab_size=832)  # embed_tokens and lm_head keep 768 rows
    edit_config(copy("config-dtype-int8"), torch_dtype="int8", dtype="int8")
    edit_config(copy("max-positions-128"), max_position_embeddings=128)
    special = copy("special-tokens-map-corrupt") / "special_tokens_map.json"
    special.write_text(special.read_text()[: special.stat().st_size // 2])


def _file_set_variants(copy: Callable[[str], Path]) -> None:
    """Copies without tokenizer.json (its config and special tokens kept), or whose weights index names a second
    shard that is absent."""
    (copy("tokenizer-json-missing") / "tokenizer.json").unlink()
    sharded = copy("shard-missing")
    first = "model-00001-of-00002.safetensors"
    (sharded / "model.safetensors").rename(sharded / first)
    header, _ = _read_safetensors(sharded / first)
    weight_map = {
        name: "model-00002-of-00002.safetensors" if name.startswith("model.layers.3.") else first
        for name in header
        if name != "__metadata__"
    }
    index = {"metadata": {"total_size": (sharded / first).stat().st_size}, "weight_map": weight_map}
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))


def _read_safetensors(path: Path) -> tuple[dict[str, dict[str, object]], bytes]:
    """The header (tensor name -> dtype, shape, data offsets; plus ``__metadata__``) and the data of a file."""
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + length]), raw[8 + length :]


def _write_safetensors(path: Path, header: dict[str, dict[str, object]], data: bytes) -> None:
    """Write ``header`` and ``data`` as a safetensors file (the offsets in the header must fit the data)."""
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the format pads the header to a multiple of 8 bytes
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data)


def _tensor_variants(copy: Callable[[str], Path]) -> None:
    """Copies whose weights file has one tensor of a wrong shape, one tensor removed, or a header of garbage."""
    weights = copy("tensor-shape-transposed") / "model.safetensors"
    header, data = _read_safetensors(weights)
    header["model.layers.1.mlp.gate_proj.weight"]["shape"] = [256, 512]  # config and the others keep [512, 256]
    _write_safetensors(weights, header, data)
    weights = copy("tensor-removed") / "model.safetensors"
    header, data = _read_safetensors(weights)
    removed = header.pop("model.layers.2.self_attn.o_proj.weight")
    start, end = cast(list[int], removed["data_offsets"])
    for name, tensor in header.items():  # the other tensors move up over the removed bytes
        if name != "__metadata__":
            first, last = cast(list[int], tensor["data_offsets"])
            if first >= end:
                tensor["data_offsets"] = [first - (end - start), last - (end - start)]
    _write_safetensors(weights, header, data[:start] + data[end:])
    weights = copy("safetensors-header-garbage") / "model.safetensors"
    raw = weights.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    weights.write_bytes(raw[:8] + b"\x07not json" * (length // 9) + b"}" * (length % 9) + raw[8 + length :])


def _template_and_config_variants(copy: Callable[[str], Path], edit_config: Callable[..., None]) -> None:
    """Copies whose chat template is not valid Jinja, whose generation config holds values of the wrong type, whose
    config names 3 key-value heads for 4 attention heads, has no architectures list, or gives rope_theta as words."""
    tokenizer = copy("chat-template-broken-jinja") / "tokenizer_config.json"
    settings = json.loads(tokenizer.read_text())
    settings["chat_template"] = "{% for message in messages %}{{ message['content'] }{% endfor"  # unclosed tags
    tokenizer.write_text(json.dumps(settings, indent=2))
    generation = copy("generation-config-wrong-types") / "generation_config.json"
    values = json.loads(generation.read_text())
    values.update(temperature="hot", top_p=[0.9], max_new_tokens="many")
    generation.write_text(json.dumps(values, indent=2))
    edit_config(copy("kv-heads-three"), num_key_value_heads=3)  # 4 attention heads; the weights keep 2 KV heads
    edit_config(copy("rope-theta-text"), rope_theta="ten thousand")
    directory = copy("architectures-missing")
    config = json.loads((directory / "config.json").read_text())
    del config["architectures"]
    (directory / "config.json").write_text(json.dumps(config, indent=2))


def _weights_layout_variants(copy: Callable[[str], Path]) -> None:
    """Copies whose weights hold a tensor of a fifth layer the config does not have, whose one-shard index is cut in
    half, whose layer-0 q_proj tensor is stored as float32 (the others stay bfloat16), or whose weights file is
    empty."""
    weights = copy("extra-layer-tensor") / "model.safetensors"
    header, data = _read_safetensors(weights)
    source = header["model.layers.3.mlp.up_proj.weight"]
    start, end = cast(list[int], source["data_offsets"])
    header["model.layers.4.mlp.up_proj.weight"] = {**source, "data_offsets": [len(data), len(data) + end - start]}
    _write_safetensors(weights, header, data + data[start:end])
    sharded = copy("index-json-corrupt")
    (sharded / "model.safetensors").rename(sharded / "model-00001-of-00001.safetensors")
    header, _ = _read_safetensors(sharded / "model-00001-of-00001.safetensors")
    weight_map = {name: "model-00001-of-00001.safetensors" for name in header if name != "__metadata__"}
    text = json.dumps({"metadata": {}, "weight_map": weight_map}, indent=2)
    (sharded / "model.safetensors.index.json").write_text(text[: len(text) // 2])  # cut mid-object
    weights = copy("tensor-float32-mixed") / "model.safetensors"
    header, data = _read_safetensors(weights)
    name = "model.layers.0.self_attn.q_proj.weight"
    start, end = cast(list[int], header[name]["data_offsets"])
    widened = b"".join(b"\0\0" + data[at : at + 2] for at in range(start, end, 2))  # bfloat16 -> float32 exactly
    growth = len(widened) - (end - start)
    for tensor_name, tensor in header.items():
        if tensor_name != "__metadata__" and cast(list[int], tensor["data_offsets"])[0] >= end:
            first, last = cast(list[int], tensor["data_offsets"])
            tensor["data_offsets"] = [first + growth, last + growth]
    header[name] = {**header[name], "dtype": "F32", "data_offsets": [start, start + len(widened)]}
    _write_safetensors(weights, header, data[:start] + widened + data[end:])
    (copy("weights-file-empty") / "model.safetensors").write_bytes(b"")  # a 0-byte weights file


def _without_tensor(path: Path, name: str) -> None:
    """Rewrite the safetensors file at ``path`` without the tensor ``name`` (the others move up over its bytes)."""
    header, data = _read_safetensors(path)
    start, end = cast(list[int], header.pop(name)["data_offsets"])
    for tensor_name, tensor in header.items():
        if tensor_name != "__metadata__" and cast(list[int], tensor["data_offsets"])[0] >= end:
            first, last = cast(list[int], tensor["data_offsets"])
            tensor["data_offsets"] = [first - (end - start), last - (end - start)]
    _write_safetensors(path, header, data[:start] + data[end:])


def _blind_variants(copy: Callable[[str], Path], edit_config: Callable[..., None]) -> None:
    """Copies whose BPE merges name a token the vocabulary lacks, whose weights lack lm_head (embeddings not tied),
    whose safetensors header lies about one tensor's offsets or dtype, whose tokenizer class is unknown, whose
    activation function is unknown, or whose config allows only 512 positions."""
    tokenizer = copy("merges-unknown-token") / "tokenizer.json"
    document = json.loads(tokenizer.read_text())
    merges = document["model"]["merges"]
    merges.insert(0, "zq xj" if isinstance(merges[0], str) else ["zq", "xj"])  # neither side is in the vocabulary
    tokenizer.write_text(json.dumps(document))
    _without_tensor(copy("lm-head-missing") / "model.safetensors", "lm_head.weight")
    weights = copy("safetensors-offsets-beyond-data") / "model.safetensors"
    header, data = _read_safetensors(weights)
    start, _ = cast(list[int], header["model.layers.3.mlp.down_proj.weight"]["data_offsets"])
    header["model.layers.3.mlp.down_proj.weight"]["data_offsets"] = [start, len(data) + 4096]  # past the end
    _write_safetensors(weights, header, data)
    weights = copy("safetensors-dtype-lie") / "model.safetensors"
    header, data = _read_safetensors(weights)
    header["model.layers.0.self_attn.q_proj.weight"]["dtype"] = "F32"  # the bytes stay those of a bfloat16 tensor
    _write_safetensors(weights, header, data)
    settings_path = copy("tokenizer-class-unknown") / "tokenizer_config.json"
    settings = json.loads(settings_path.read_text())
    settings["tokenizer_class"] = "MysteryTokenizerFast"
    settings_path.write_text(json.dumps(settings, indent=2))
    edit_config(copy("hidden-act-unknown"), hidden_act="mystery_gelu")
    edit_config(copy("max-positions-512"), max_position_embeddings=512)


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
