"""``scripts/regenerate_train_data.py`` stand-in: answer every user turn again with the running target.

Same flags as SpecForge's ``scripts/regenerate_train_data.py``. It really calls each ``--server-address``'s
OpenAI chat endpoint, so the target must be up; failed records go to ``<output>_error.jsonl``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
from pathlib import Path
from typing import Any

import httpx

from twin.datasets import normalise_turns, read_jsonl, write_jsonl
from twin.ports import PortMap


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="regenerate_train_data.py")
    parser.add_argument("--model", required=True)
    parser.add_argument("--server-address", required=True, nargs="+")
    parser.add_argument("--input-file-path", required=True, type=Path)
    parser.add_argument("--output-file-path", required=True, type=Path)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--top-p", type=float)
    parser.add_argument("--top-k", type=int)
    parser.add_argument("--repetition-penalty", type=float)
    parser.add_argument("--num-samples", type=int)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--reasoning", choices=["none", "save", "disable"], default="none")
    parser.add_argument("--is-gpt-oss", action="store_true")
    return parser


async def _answer(
    client: httpx.AsyncClient, address: str, options: argparse.Namespace, messages: list[dict[str, str]]
) -> str:
    body: dict[str, Any] = {
        "model": options.model,
        "messages": messages,
        "max_tokens": options.max_tokens,
        "temperature": options.temperature,
    }
    for key in ("top_p", "top_k", "repetition_penalty"):
        if getattr(options, key) is not None:
            body[key] = getattr(options, key)
    base = address if address.startswith("http") else f"http://{address}"
    ports = PortMap.from_environment()
    base = ports.reach_url(base) if ports is not None else base
    response = await client.post(f"{base}/v1/chat/completions", json=body)
    response.raise_for_status()
    return str(response.json()["choices"][0]["message"]["content"] or "")


async def _regenerate(
    record: dict[str, Any], client: httpx.AsyncClient, address: str, options: argparse.Namespace
) -> dict[str, Any]:
    turns, conversation = normalise_turns(record), []
    for turn in turns:
        if turn["role"] == "assistant":
            continue
        conversation.append(turn)
        if turn["role"] == "user":
            conversation.append({"role": "assistant", "content": await _answer(client, address, options, conversation)})
    return {"id": record.get("id"), "conversations": conversation}


async def run(options: argparse.Namespace) -> int:
    records = read_jsonl(options.input_file_path)[: options.num_samples]
    addresses = itertools.cycle(options.server_address)
    limit = asyncio.Semaphore(max(1, options.concurrency * len(options.server_address)))
    done: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []

    async def one(record: dict[str, Any], address: str) -> None:
        async with limit:
            try:
                done.append(await _regenerate(record, client, address, options))
            except (httpx.HTTPError, KeyError, ValueError) as error:
                errors.append({"id": record.get("id"), "error": f"{type(error).__name__}: {error}"})
            finished = len(done) + len(errors)
            if finished % 16 == 0 or finished == len(records):
                print(f"Regenerating: {finished}/{len(records)} done, {len(errors)} errors", flush=True)

    async with httpx.AsyncClient(timeout=httpx.Timeout(600.0, connect=10.0)) as client:
        await asyncio.gather(*(one(record, next(addresses)) for record in records))
    order = {record.get("id"): index for index, record in enumerate(records)}
    write_jsonl(options.output_file_path, sorted(done, key=lambda record: order.get(record.get("id"), 0)))
    if errors:
        error_path = options.output_file_path.with_name(options.output_file_path.stem + "_error.jsonl")
        write_jsonl(error_path, errors)
        print(f"{len(errors)} records failed; see {error_path}", file=sys.stderr, flush=True)
    print(f"Wrote {len(done)} regenerated records to {options.output_file_path}", flush=True)
    return 0 if done else 1


def main(argv: list[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    split = arguments.index("--") if "--" in arguments else -1
    options = _parser().parse_args(arguments[split + 1 :])
    try:
        return asyncio.run(run(options))
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
