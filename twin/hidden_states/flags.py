"""The command line of ``scripts/prepare_hidden_states.py`` in three revisions of the SpecForge checkout.

The flag sets were read from the checkout's history (SpecForge's ``scripts/prepare_hidden_states.py`` and,
up to 2026-07-13, ``specforge/args.py``'s ``SGLangBackendArgs.add_args``). They differ in how the EAGLE-3
capture layers are chosen:

- ``aux-hidden-states`` (to 2026-07-13): ``--enable-aux-hidden-states`` and ``--aux-hidden-states-layers``
  (comma-separated), plus ``--is-vlm`` and ``--model-download-dir``;
- ``capture-layers`` (2026-07-14 to 2026-07-20): ``--capture-layers`` (three comma-separated ids);
- ``strategy`` (from 2026-07-21, the 0.2.0 wheel's era): ``--strategy`` and ``--draft-model-config``; the
  layers come from the draft config.

All take the model, data, inference, I/O and ``--sglang-*`` options below.
"""

from __future__ import annotations

import argparse

from twin.scenario import PrepareScript

_COMMON: list[tuple[str, type | None, object]] = [  # flag, type (None: a switch), default
    ("--target-model-path", str, None),
    ("--trust-remote-code", None, False),
    ("--data-path", str, None),
    ("--max-length", int, 2048),
    ("--chat-template", str, "llama3"),
    ("--is-preformatted", None, False),
    ("--num-samples", int, None),
    ("--build-dataset-num-proc", int, 8),
    ("--tp-size", int, 1),
    ("--batch-size", int, 32),
    ("--cache-dir", str, "./cache"),
    ("--output-path", str, None),
    ("--dist-timeout", int, 2000),
    ("--num-io-threads", int, None),
    ("--num-workers", int, 4),
    ("--io-queue-size", int, 50),
    ("--file-group-size", int, 2000),
    ("--compress", None, False),
    ("--compression-level", int, 6),
    ("--sglang-attention-backend", str, "flashinfer"),
    ("--sglang-mem-fraction-static", float, 0.4),
    ("--sglang-context-length", int, None),
    ("--sglang-enable-nccl-nvls", None, False),
    ("--sglang-enable-symm-mem", None, False),
    ("--sglang-enable-torch-compile", None, False),
    ("--sglang-enable-dp-attention", None, False),
    ("--sglang-enable-dp-lm-head", None, False),
    ("--sglang-ep-size", int, 1),
]
_CAPTURE: dict[PrepareScript, list[tuple[str, type | None, object]]] = {
    "aux-hidden-states": [
        ("--is-vlm", None, False),
        ("--enable-aux-hidden-states", None, False),
        ("--aux-hidden-states-layers", str, None),
        ("--model-download-dir", str, None),
    ],
    "capture-layers": [("--capture-layers", str, None)],
    "strategy": [("--strategy", str, "eagle3"), ("--draft-model-config", str, None)],
}
REQUIRED = {"--target-model-path", "--data-path"}


def parser(revision: PrepareScript) -> argparse.ArgumentParser:
    """The script's argument parser for one revision (``--help`` prints it, bad flags exit with status 2)."""
    result = argparse.ArgumentParser(prog="prepare_hidden_states.py")
    for flag, kind, default in _CAPTURE[revision] + _COMMON:
        if kind is None:
            result.add_argument(flag, action="store_true")
        else:
            result.add_argument(flag, type=kind, default=default, required=flag in REQUIRED)
    return result
