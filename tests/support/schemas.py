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
lws_schema = json.load(open(sys.argv[1]))
results = []
for kind, path in json.loads(sys.argv[2]):
    try:
        document = yaml.safe_load(open(path))
        if kind == "skypilot":
            jsonschema.validate(document, schemas.get_task_schema())
            task = sky.Task.from_yaml_config(document)
            results.append({"num_nodes": task.num_nodes, "resources": str(task.resources)})
        else:
            jsonschema.validate(document, lws_schema)
            results.append({"kind": document["kind"]})
    except Exception as error:
        results.append({"error": f"{type(error).__name__}: {str(error).splitlines()[0]}"})
print(json.dumps(results))
"""


def skypilot_python() -> Path | None:
    """The interpreter of the environment with SkyPilot, or None when it is not there."""
    configured = os.environ.get("OPSLOOP_SKYPILOT_PYTHON")
    candidate = Path(configured) if configured else REPO_ROOT / ".venv-skypilot" / "bin" / "python"
    return candidate if candidate.exists() else None


def validate(files: list[tuple[str, Path]]) -> list[dict[str, object]]:
    """Validate rendered files (``("skypilot" | "lws", path)``) in one run of the checker; each result holds the
    checker's reading of the file, or ``error`` with the schema's complaint."""
    python = skypilot_python()
    assert python is not None
    listed = json.dumps([(kind, str(path)) for kind, path in files])
    completed = subprocess.run(
        [str(python), "-I", "-c", CHECKER, str(LWS_SCHEMA), listed],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=files[0][1].parent,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(completed.stdout.strip().splitlines()[-1])
    assert isinstance(results, list)
    return results
