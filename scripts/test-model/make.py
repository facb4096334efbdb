"""Make a tiny Llama-architecture model (and optionally a random EAGLE-3 drafter) for real-engine tests.

Run it with the engine environment's interpreter (it needs torch, safetensors and tokenizers, which the
agent's own environment does not have): ``scripts/make-test-model DIR [--eagle3 DRAFTER_DIR]``.

Contract:
- The target is a ``LlamaForCausalLM`` with random weights (seeded), 4 layers, hidden size 256, a
  byte-level BPE tokenizer trained with ``tokenizers`` on ``corpus.txt`` beside this file, and a chat
  template. The drafter is a one-layer ``LlamaForCausalLMEagle3`` in the layout vLLM loads (``midlayer.*``,
  ``fc``, ``d2t``/``t2d`` for a reduced draft vocabulary) with ``eagle_aux_hidden_state_layer_ids`` set
  explicitly, because vLLM's default for a target of fewer than 8 layers repeats a layer.
- Output is byte-identical on re-run with the same seed and the same torch/tokenizers/safetensors.
- Files are written into a temporary sibling directory and renamed into place, so an interrupted run
  never leaves a half-written model; an existing DIR is replaced only with ``--force``.
- The logits are deliberately spread (large output-projection scale) so greedy decoding has clear
  winners: the same prompt gives the same text under different batch shapes and kernels.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus.txt"
SEED = 1234
LAYERS = 4
HIDDEN = 256
INTERMEDIATE = 512
HEADS = 4
KV_HEADS = 2
MAX_POSITIONS = 2048
BPE_VOCAB = 1024
DRAFT_VOCAB = 512
AUX_LAYER_IDS = [1, 2, 3]
BOS, EOS = "<s>", "</s>"
ROLE_TOKENS = ["<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}<|end|>"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def train_tokenizer() -> Tokenizer:
    """A byte-level BPE tokenizer; training on the same corpus gives the same merges (checked on re-run)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=BPE_VOCAB,
        min_frequency=2,
        special_tokens=[BOS, EOS, *ROLE_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS.read_text(encoding="utf-8").splitlines(), trainer=trainer)
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    return tokenizer


def padded(size: int, multiple: int = 64) -> int:
    return (size + multiple - 1) // multiple * multiple


def write_json(path: Path, value: dict[str, Any]) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def llama_config(vocab: int, bos: int, eos: int, layers: int) -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": layers,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HIDDEN // HEADS,
        "hidden_act": "silu",
        "max_position_embeddings": MAX_POSITIONS,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "vocab_size": vocab,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "mlp_bias": False,
        "initializer_range": 0.02,
        "bos_token_id": bos,
        "eos_token_id": eos,
        "torch_dtype": "bfloat16",
        "use_cache": True,
    }


class Weights:
    """Seeded random tensors in bfloat16; one generator, drawn in a fixed order."""

    def __init__(self, seed: int) -> None:
        self.generator = torch.Generator().manual_seed(seed)
        self.tensors: dict[str, torch.Tensor] = {}

    def normal(self, name: str, shape: tuple[int, ...], std: float) -> None:
        values = torch.randn(shape, generator=self.generator, dtype=torch.float32) * std
        self.tensors[name] = values.to(torch.bfloat16)

    def ones(self, name: str, size: int) -> None:
        self.tensors[name] = torch.ones(size, dtype=torch.bfloat16)

    def decoder_layer(self, prefix: str, attention_input: int) -> None:
        head_dim = HIDDEN // HEADS
        self.normal(f"{prefix}.self_attn.q_proj.weight", (HEADS * head_dim, attention_input), 0.05)
        self.normal(f"{prefix}.self_attn.k_proj.weight", (KV_HEADS * head_dim, attention_input), 0.05)
        self.normal(f"{prefix}.self_attn.v_proj.weight", (KV_HEADS * head_dim, attention_input), 0.05)
        self.normal(f"{prefix}.self_attn.o_proj.weight", (HIDDEN, HEADS * head_dim), 0.05)
        self.normal(f"{prefix}.mlp.gate_proj.weight", (INTERMEDIATE, HIDDEN), 0.05)
        self.normal(f"{prefix}.mlp.up_proj.weight", (INTERMEDIATE, HIDDEN), 0.05)
        self.normal(f"{prefix}.mlp.down_proj.weight", (HIDDEN, INTERMEDIATE), 0.05)
        self.ones(f"{prefix}.input_layernorm.weight", HIDDEN)
        self.ones(f"{prefix}.post_attention_layernorm.weight", HIDDEN)

    def save(self, path: Path) -> None:
        save_file(self.tensors, str(path), metadata={"format": "pt"})


def tokenizer_files(directory: Path, tokenizer: Tokenizer) -> None:
    tokenizer.save(str(directory / "tokenizer.json"), pretty=True)
    added = {
        str(tokenizer.token_to_id(token)): {
            "content": token,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for token in [BOS, EOS, *ROLE_TOKENS]
    }
    write_json(
        directory / "tokenizer_config.json",
        {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": BOS,
            "eos_token": EOS,
            "pad_token": EOS,
            "unk_token": None,
            "add_bos_token": False,
            "add_eos_token": False,
            "clean_up_tokenization_spaces": False,
            "model_max_length": MAX_POSITIONS,
            "chat_template": CHAT_TEMPLATE,
            "added_tokens_decoder": added,
        },
    )
    write_json(directory / "special_tokens_map.json", {"bos_token": BOS, "eos_token": EOS, "pad_token": EOS})


def make_target(directory: Path, tokenizer: Tokenizer) -> dict[str, Any]:
    vocab = padded(tokenizer.get_vocab_size())
    bos, eos = tokenizer.token_to_id(BOS), tokenizer.token_to_id(EOS)
    config = llama_config(vocab, bos, eos, LAYERS)
    write_json(directory / "config.json", config)
    write_json(directory / "generation_config.json", {"bos_token_id": bos, "eos_token_id": eos})
    tokenizer_files(directory, tokenizer)
    weights = Weights(SEED)
    weights.normal("model.embed_tokens.weight", (vocab, HIDDEN), 1.0)
    for layer in range(LAYERS):
        weights.decoder_layer(f"model.layers.{layer}", HIDDEN)
    weights.ones("model.norm.weight", HIDDEN)
    weights.normal("lm_head.weight", (vocab, HIDDEN), 0.5)
    weights.save(directory / "model.safetensors")
    return config


def make_drafter(directory: Path, target: dict[str, Any]) -> None:
    """One EAGLE-3 layer over the target's hidden size; the draft vocabulary is the first DRAFT_VOCAB ids."""
    vocab = int(target["vocab_size"])
    config = llama_config(vocab, int(target["bos_token_id"]), int(target["eos_token_id"]), 1)
    config.update(
        {
            "architectures": ["LlamaForCausalLMEagle3"],
            "draft_vocab_size": DRAFT_VOCAB,
            "target_hidden_size": HIDDEN,
            "eagle_aux_hidden_state_layer_ids": AUX_LAYER_IDS,
            "eagle_config": {"eagle_aux_hidden_state_layer_ids": AUX_LAYER_IDS, "use_aux_hidden_state": True},
        }
    )
    write_json(directory / "config.json", config)
    weights = Weights(SEED + 1)
    weights.decoder_layer("midlayer", 2 * HIDDEN)
    weights.ones("midlayer.hidden_norm.weight", HIDDEN)
    weights.normal("fc.weight", (HIDDEN, len(AUX_LAYER_IDS) * HIDDEN), 0.05)
    weights.ones("norm.weight", HIDDEN)
    weights.normal("lm_head.weight", (DRAFT_VOCAB, HIDDEN), 0.5)
    # Draft id d maps to target id d + d2t[d]; with the identity prefix every offset is zero.
    weights.tensors["d2t"] = torch.zeros(DRAFT_VOCAB, dtype=torch.int64)
    weights.tensors["t2d"] = torch.arange(vocab) < DRAFT_VOCAB
    weights.save(directory / "model.safetensors")


def replace_directory(final: Path, build: Any, force: bool) -> None:
    """Build into a sibling temporary directory, then move it into place."""
    if final.exists() and not force:
        raise SystemExit(f"make-test-model: {final} exists; pass --force to replace it")
    final.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        build(scratch)
        os.chmod(scratch, 0o755)
        for file in scratch.iterdir():
            os.chmod(file, 0o644)
        if final.exists():
            shutil.rmtree(final)
        scratch.rename(final)
    finally:
        if scratch.exists():
            shutil.rmtree(scratch)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="make-test-model", description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="where the target model goes")
    parser.add_argument("--eagle3", type=Path, metavar="DRAFTER_DIR", help="also make a random EAGLE-3 drafter")
    parser.add_argument("--force", action="store_true", help="replace existing directories")
    arguments = parser.parse_args(argv)
    torch.use_deterministic_algorithms(True)
    tokenizer = train_tokenizer()
    target: dict[str, Any] = {}

    def build_target(directory: Path) -> None:
        target.update(make_target(directory, tokenizer))

    replace_directory(arguments.directory, build_target, arguments.force)
    print(f"target: {arguments.directory} (vocab {target['vocab_size']}, {LAYERS} layers, hidden {HIDDEN})")
    if arguments.eagle3 is not None:
        replace_directory(arguments.eagle3, lambda directory: make_drafter(directory, target), arguments.force)
        print(f"eagle3 drafter: {arguments.eagle3} (draft vocab {DRAFT_VOCAB}, aux layers {AUX_LAYER_IDS})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
