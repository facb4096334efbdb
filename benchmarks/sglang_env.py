"""The reference client's environment: sglang 0.5.8's ``bench_serving`` in its own virtual environment.

sglang 0.5.8 is installed without its GPU dependencies (``--no-deps``) plus the few packages its
benchmark client imports; that is enough for ``python -m sglang.bench_serving`` on a CPU-only machine
(from 0.5.10 on the client imports torch). The environment lives outside the repository, in a cache
directory, and is created on first use. The client needs a tokenizer and must not download one: a
tiny word-level tokenizer (``w0`` .. ``wN``, the words the benchmark server streams) is built
locally with the ``tokenizers`` package the environment already has.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import note

SGLANG_VERSION = "0.5.8"
CLIENT_PACKAGES = [
    "aiohttp",
    "numpy",
    "requests",
    "tqdm",
    "transformers<5",
    "pybase64",
    "IPython",
    "pydantic",
    "datasets",
    "pillow",
    "huggingface_hub<1.0",
]
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
INSTALL_TIMEOUT_S = 1200.0
VOCABULARY = 2000

_TOKENIZER_SCRIPT = """
import sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
words = ["[UNK]"] + [f"w{index}" for index in range(int(sys.argv[2]))]
model = Tokenizer(models.WordLevel({word: index for index, word in enumerate(words)}, unk_token="[UNK]"))
model.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
model.decoder = decoders.WordPiece(prefix="##", cleanup=False)
PreTrainedTokenizerFast(tokenizer_object=model, unk_token="[UNK]").save_pretrained(sys.argv[1])
"""


@dataclass
class Reference:
    python: Path
    tokenizer: Path


def default_venv() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "opsloop" / "bench" / f"sglang-{SGLANG_VERSION}"


def offline_environment() -> dict[str, str]:
    return {**{name: value for name, value in os.environ.items() if not name.startswith("OPSLOOP_")}, **OFFLINE}


def _run(argv: list[str], timeout: float) -> str | None:
    """Run a setup command; None when it worked, else the end of its output."""
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    if result.returncode != 0:
        return (result.stderr or result.stdout).strip()[-600:]
    return None


def _importable(python: Path) -> bool:
    return _run([str(python), "-c", "import sglang.bench_serving"], timeout=120) is None


def ensure_reference(venv: Path, tokenizer_dir: Path, create: bool = True) -> Reference | str:
    """The reference client, set up if needed; a sentence saying why not when it cannot be."""
    python = venv / "bin" / "python"
    if not (python.exists() and _importable(python)):
        if not create:
            return f"no sglang {SGLANG_VERSION} environment at {venv} (and creating one was not allowed)"
        note(f"creating the sglang {SGLANG_VERSION} client environment in {venv} (a few minutes, once)")
        steps = [
            [sys.executable, "-m", "venv", "--clear", str(venv)],
            [str(python), "-m", "pip", "install", "--quiet", f"sglang=={SGLANG_VERSION}", "--no-deps"],
            [str(python), "-m", "pip", "install", "--quiet", *CLIENT_PACKAGES],
        ]
        for step in steps:
            problem = _run(step, INSTALL_TIMEOUT_S)
            if problem is not None:
                return f"cannot set up sglang {SGLANG_VERSION} ({' '.join(step[-3:])}): {problem}"
        if not _importable(python):
            return f"sglang {SGLANG_VERSION} was installed in {venv} but sglang.bench_serving does not import"
    problem = _run([str(python), "-c", _TOKENIZER_SCRIPT, str(tokenizer_dir), str(VOCABULARY)], timeout=300)
    if problem is not None:
        return f"cannot build the local tokenizer: {problem}"
    return Reference(python=python, tokenizer=tokenizer_dir)
