"""Validation of rendered deployments against the real schemas, in a separate environment with SkyPilot installed
(``.venv-skypilot``, made by ``.ci/run``; SkyPilot is large, so the project's own environment does not carry it).

The checker runs there: SkyPilot's task schema from its own package (``sky.utils.schemas.get_task_schema``) and
``sky.Task.from_yaml_config`` for each task, and the LeaderWorkerSet CRD's schema (``tests/data/lws``) for each
manifest, both with ``jsonschema``; YAML is read with PyYAML, so the files must be YAML as other tools read it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
LWS_SCHEMA = REPO_ROOT / "tests" / "data" / "lws" / "leaderworkerset-v1.schema.json"
CHECKER = r"""
import json, sys
import jsonschema, yaml
import sky
from sky.utils import schemas
kind, path, lws_schema = sys.argv[1], sys.argv[2], sys.argv[3]
document = yaml.safe_load(open(path))
if kind == "skypilot":
    jsonschema.validate(document, schemas.get_task_schema())
    task = sky.Task.from_yaml_config(document)
    print(json.dumps({"num_nodes": task.num_nodes, "resources": str(task.resources)}))
else:
    jsonschema.validate(document, json.load(open(lws_schema)))
    print(json.dumps({"kind": document["kind"]}))
"""


def skypilot_python() -> Path | None:
    """The interpreter of the environment with SkyPilot, or None when it is not there."""
    configured = os.environ.get("OPSLOOP_SKYPILOT_PYTHON")
    candidate = Path(configured) if configured else REPO_ROOT / ".venv-skypilot" / "bin" / "python"
    return candidate if candidate.exists() else None


def validate(kind: str, path: Path) -> dict[str, object]:
    """Validate a rendered file; raises AssertionError with the checker's message when it is invalid."""
    python = skypilot_python()
    assert python is not None
    completed = subprocess.run(
        [str(python), "-I", "-c", CHECKER, kind, str(path), str(LWS_SCHEMA)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=path.parent,
        check=False,
    )
    errors = [line for line in completed.stderr.splitlines() if "Error:" in line]
    assert completed.returncode == 0, "\n".join(errors[-3:]) or completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert isinstance(result, dict)
    return result
