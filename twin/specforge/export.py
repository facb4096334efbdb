"""``specforge export`` stand-in: turn a runtime checkpoint into a servable drafter directory.

Mirrors SpecForge's exporter (``specforge/export/to_sglang.py``): ``--to sglang`` handles only
``LlamaForCausalLMEagle3`` drafts; the output directory holds ``config.json`` and safetensors weights
(``embed_tokens`` omitted).
The simulated directory also records the drafter's quality (``sim_quality.json``) for the engine.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from twin.quality import write_quality
from twin.specforge.train import TrainingError


def _tiny_safetensors(path: Path) -> None:
    """A valid safetensors file with one small tensor (8-byte header length, JSON header, data)."""
    data = struct.pack("<4f", 0.0, 0.0, 0.0, 0.0)
    header = json.dumps(
        {
            "fc.weight": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, len(data)]},
            "__metadata__": {"format": "pt", "simulated": "true"},
        }
    ).encode("utf-8")
    header += b" " * (-len(header) % 8)
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)


def export(target: str, checkpoint: Path, draft_config: Path, output_dir: Path) -> int:
    state_file = checkpoint / "training_state.pt"
    try:
        state = json.loads(state_file.read_text(encoding="utf-8"))
        acceptance = float(state["per_position_acceptance"])
    except (OSError, ValueError, KeyError, TypeError):
        raise TrainingError(
            f"FileNotFoundError: {checkpoint} is not a runtime checkpoint (training_state.pt missing or unreadable)"
        ) from None
    try:
        config = json.loads(draft_config.read_text(encoding="utf-8"))
        architecture = str((config.get("architectures") or [""])[0])
    except (OSError, ValueError, AttributeError):
        raise TrainingError(f"FileNotFoundError: cannot read the draft config {draft_config}") from None
    if target == "sglang" and architecture != "LlamaForCausalLMEagle3":
        raise TrainingError(
            f"NotImplementedError: export to sglang handles only LlamaForCausalLMEagle3 drafts, not "
            f"{architecture!r}; an MLA draft needs an explicit weight map"
        )
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    _tiny_safetensors(output_dir / "model.safetensors")
    write_quality(
        output_dir,
        acceptance,
        source="specforge export",
        checkpoint=str(checkpoint.resolve()),
        step=state.get("step"),
        data_alignment=state.get("data_alignment"),
    )
    print(
        f"Exported {checkpoint} ({architecture}, step {state.get('step')}) to {output_dir} for {target}",
        flush=True,
    )
    return 0
