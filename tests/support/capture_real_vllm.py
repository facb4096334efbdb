"""Provoke the cases of :mod:`support.real_vllm_cases` on a real vLLM and keep their logs as fixtures.

``scripts/capture-real-vllm-logs [--only ID ...] [--out DIR]`` writes ``DIR/ID.log`` for each case
(plus ``ID.metrics.txt`` where the server answered ``/metrics``) and ``DIR/index.toml``: the exact
command, how it was provoked, the true diagnosis class, the key line, the exit code or signal. Paths of
this machine are replaced by neutral ones (``/models/...``, ``/opt/vllm-cpu``, ``/home/user``).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from support.real_engine import DEFAULT_ENGINE_ENVIRONMENT, RealEngine, VllmServer, http_get, http_post_json, prepare
from support.real_vllm_cases import CASES, Case

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "data" / "real_vllm"
START_TIMEOUT = 300.0
EXIT_TIMEOUT = 90.0
LOAD_SECONDS = 25.0
STEPS = {
    "start": "run the command and wait for it to exit",
    "serve": "run the command; after /health answers 200, one chat request and one streamed completion; the log "
             "as it stood then (the server was stopped with SIGTERM afterwards)",
    "serve_load": "as serve, then four clients send greedy completions for 25 s; the log as it stood then",
    "stop_sigterm": "after /health answers 200 and two requests: kill -TERM <pid of the API server>",
    "kill_worker": "after /health answers 200 and two requests: kill -KILL <pid of the process titled VLLM::Worker>",
    "kill_engine_core": "after /health answers 200 and two requests: kill -KILL <pid of the process titled "
                        "VLLM::EngineCore>",
    "kill_server": "after /health answers 200 and two requests: kill -KILL <pid of the API server>",
    "hold_port": "first listen on 127.0.0.1:<port> from another process, then run the command",
}


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
    return {
        "target": str(engine.model),
        "drafter": str(engine.drafter),
        "missing": str(root / "missing-model"),
        "config-file": str(engine.model / "config.json"),
        "hub-id": "example-org/tiny-llama-not-here",
        **{path.name: str(path) for path in root.iterdir() if path.is_dir()},
    }


@dataclass
class Record:
    case: Case
    command: str
    log_file: str
    ready: bool = False
    exit_code: int | None = None
    signal_name: str = ""
    seconds: float = 0.0
    key_line: str = ""
    extra: dict[str, str] = field(default_factory=dict)


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


def _requests(server: VllmServer) -> None:
    http_post_json(
        f"{server.base_url}/v1/chat/completions",
        {
            "model": server.served_model,
            "messages": [{"role": "user", "content": "Say hello."}],
            "max_tokens": 16,
            "temperature": 0,
        },
    )
    body = json.dumps(
        {
            "model": server.served_model,
            "prompt": "The operator opened the console",
            "max_tokens": 16,
            "temperature": 0,
            "stream": True,
        }
    ).encode()
    request = urllib.request.Request(f"{server.base_url}/v1/completions", body, {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        response.read()


def _load(server: VllmServer, seconds: float) -> None:
    """Four clients sending greedy completions; prompts repeat phrases so n-gram lookup has material."""
    deadline = time.monotonic() + seconds

    def client(number: int) -> None:
        while time.monotonic() < deadline:
            prompt = f"step {number}: the cache is warm, the cache is warm, the cache is " * 3
            http_post_json(
                f"{server.base_url}/v1/completions",
                {
                    "model": server.served_model,
                    "prompt": prompt,
                    "max_tokens": 64,
                    "temperature": 0,
                    "ignore_eos": True,
                },
            )

    threads = [threading.Thread(target=client, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _after_ready(case: Case, server: VllmServer, out: Path, neutral: Neutraliser, record: Record) -> None:
    _requests(server)
    if case.action == "serve_load":
        _load(server, LOAD_SECONDS)
        time.sleep(6)  # one more stats interval, so the last lines cover the load
    if case.action in ("serve", "serve_load"):
        status, metrics = http_get(f"{server.base_url}/metrics")
        if status == 200:
            (out / f"{case.id}.metrics.txt").write_text(neutral(metrics))
            record.extra["metrics_file"] = f"{case.id}.metrics.txt"
        (out / record.log_file).write_text(neutral(server.log_path.read_text(errors="replace")))
        record.extra["stop_exit_code_after_sigterm"] = str(server.stop())
        return
    titles = {"kill_worker": "VLLM::Worker", "kill_engine_core": "VLLM::EngineCore"}
    if case.action in titles:
        killed = server.signal_children(titles[case.action], signal.SIGKILL)
        record.extra["killed"] = f"{titles[case.action]} ({len(killed)} process) with SIGKILL"
    elif case.action == "kill_server":
        assert server.process is not None
        server.process.send_signal(signal.SIGKILL)
    elif case.action == "stop_sigterm":
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
    record.exit_code = server.wait_exit(EXIT_TIMEOUT)


def fill(argument: str, variants: dict[str, str]) -> str:
    """Replace ``{name}`` placeholders by the paths of the models and variants."""
    for name, path in variants.items():
        argument = argument.replace("{" + name + "}", path)
    return argument


def run_case(
    case: Case, engine: RealEngine, variants: dict[str, str], out: Path, scratch: Path, neutral: Neutraliser
) -> Record:
    arguments = [fill(argument, variants) for argument in case.arguments]
    server = VllmServer(
        engine,
        scratch / f"{case.id}.log",
        model=variants[case.model],
        arguments=arguments,
        environment=case.environment,
        entry=case.entry,
    )
    environment = {**DEFAULT_ENGINE_ENVIRONMENT, **case.environment}
    prefix = " ".join(f"{name}={shlex.quote(value)}" for name, value in environment.items())
    command = neutral(f"{prefix} {shlex.join(server.command())}".replace(str(engine.python), "python"))
    record = Record(case, command, f"{case.id}.log")
    holder = None
    if case.action == "hold_port":
        holder = socket.socket()
        holder.bind(("127.0.0.1", server.port))
        holder.listen()
    started = time.monotonic()
    try:
        server.start()
        outcome = server.wait(START_TIMEOUT)
        record.ready = outcome == "ready"
        if outcome == "ready" and case.action not in ("start", "hold_port"):
            _after_ready(case, server, out, neutral, record)
        elif outcome == "exited":
            record.exit_code = server.process.returncode if server.process else None
        else:
            record.extra["outcome"] = outcome
    finally:
        record.seconds = round(time.monotonic() - started, 1)
        stopped = server.stop()
        if record.exit_code is None and outcome != "timeout" and case.action not in ("serve", "serve_load"):
            record.exit_code = stopped
        if holder is not None:
            holder.close()
    if not (out / record.log_file).exists() or case.action not in ("serve", "serve_load"):
        (out / record.log_file).write_text(neutral(server.log_path.read_text(errors="replace")))
    if record.exit_code is not None and record.exit_code < 0:
        record.signal_name = signal.Signals(-record.exit_code).name
    record.key_line = key_line(case, (out / record.log_file).read_text())
    return record


def key_line(case: Case, text: str) -> str:
    """The first whole line of ``text`` that matches the case's key pattern ('' when none does)."""
    match = re.search(case.key_pattern, text)
    if match is None:
        return ""
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return text[start : end if end >= 0 else len(text)]


def toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def write_index(records: list[Record], out: Path, engine_version: str) -> None:
    lines = [
        "# Real vLLM logs kept as fixtures; written by scripts/capture-real-vllm-logs.",
        f"# Engine: vllm-cpu {engine_version} (torch 2.13.0+cpu), the tiny test model of scripts/make-test-model.",
        "# expected_class: the true diagnosis in the vocabulary of tools/logs/library.py.",
        "",
    ]
    for record in records:
        case = record.case
        lines += [
            "[[cases]]",
            f"id = {toml_string(case.id)}",
            f"file = {toml_string(record.log_file)}",
            f"provoked = {toml_string(case.provoked)}",
            f"steps = {toml_string(STEPS[case.action])}",
            f"command = {toml_string(record.command)}",
            f"expected_class = {toml_string(case.expected_class)}",
            f"key_line = {toml_string(record.key_line)}",
            f"ready = {str(record.ready).lower()}",
        ]
        if record.exit_code is not None:
            lines.append(f"exit_code = {record.exit_code}")
        if record.signal_name:
            lines.append(f"signal = {toml_string(record.signal_name)}")
        lines.append(f"seconds = {record.seconds}")
        lines += [f"{name} = {toml_string(value)}" for name, value in sorted(record.extra.items())]
        if case.note:
            lines.append(f"note = {toml_string(case.note)}")
        lines.append("")
    (out / "index.toml").write_text("\n".join(lines))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="capture-real-vllm-logs", description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="case ids (default: all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--reindex", action="store_true",
                        help="run nothing: rewrite index.toml from the kept logs and the current case table")
    arguments = parser.parse_args(argv)
    if arguments.reindex:
        records = load_previous(arguments.out)
        for record in records.values():
            record.key_line = key_line(record.case, (arguments.out / record.log_file).read_text())
            if (arguments.out / f"{record.case.id}.metrics.txt").exists():
                record.extra["metrics_file"] = f"{record.case.id}.metrics.txt"
        write_index([records[case.id] for case in CASES if case.id in records], arguments.out,
                    engine_version(prepare()))
        return 0
    engine = prepare()
    version = engine_version(engine)
    arguments.out.mkdir(parents=True, exist_ok=True)
    selected = [case for case in CASES if arguments.only is None or case.id in arguments.only]
    previous = load_previous(arguments.out)
    with tempfile.TemporaryDirectory(prefix="opsloop-real-vllm-") as scratch_name:
        scratch = Path(scratch_name)
        (scratch / "variants").mkdir()
        variants = make_variants(engine, scratch / "variants")
        neutral = Neutraliser(engine, scratch / "variants")
        for case in selected:
            print(f"== {case.id}", file=sys.stderr, flush=True)
            record = run_case(case, engine, variants, arguments.out, scratch, neutral)
            previous[case.id] = record
            print(
                f"   ready={record.ready} exit={record.exit_code} {record.seconds}s key: {record.key_line[:160]}",
                file=sys.stderr,
                flush=True,
            )
    ordered = [previous[case.id] for case in CASES if case.id in previous]
    write_index(ordered, arguments.out, version)
    return 0


def engine_version(engine: RealEngine) -> str:
    completed = subprocess.run(
        [str(engine.python), "-c", "import vllm; print(vllm.__version__)"], capture_output=True, text=True, check=False
    )
    return completed.stdout.strip().splitlines()[-1] if completed.stdout.strip() else "unknown"


def load_previous(out: Path) -> dict[str, Record]:
    """Records of cases captured earlier (kept when only some cases are captured again)."""
    index = out / "index.toml"
    if not index.exists():
        return {}
    by_id = {case.id: case for case in CASES}
    records: dict[str, Record] = {}
    for entry in tomllib.loads(index.read_text()).get("cases", []):
        case = by_id.get(entry["id"])
        if case is None:
            continue
        known = {
            "id",
            "file",
            "provoked",
            "steps",
            "command",
            "expected_class",
            "key_line",
            "ready",
            "exit_code",
            "signal",
            "seconds",
            "note",
        }
        records[case.id] = Record(
            case,
            entry["command"],
            entry["file"],
            entry["ready"],
            entry.get("exit_code"),
            entry.get("signal", ""),
            entry["seconds"],
            entry["key_line"],
            {key: value for key, value in entry.items() if key not in known},
        )
    return records


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
