"""Stand-in for SpecForge's scripts/regenerate_train_data.py: same flags, really asks the target server.

Every assistant turn is answered again by POST /v1/chat/completions on ``--server-address``; records
that fail go to ``<output>_error.jsonl``, like the real script.
"""

import argparse
import json
import sys
import urllib.request
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(prog="regenerate_train_data.py")
    parser.add_argument("--model", required=True)
    parser.add_argument("--server-address", required=True, nargs="+")
    parser.add_argument("--input-file-path", required=True, type=Path)
    parser.add_argument("--output-file-path", required=True, type=Path)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--num-samples", type=int)
    options = parser.parse_args()
    records = [json.loads(line) for line in options.input_file_path.read_text().splitlines() if line.strip()]
    done, errors = [], []
    for record in records[: options.num_samples]:
        messages = []
        try:
            for turn in record["conversations"]:
                if turn["role"] == "assistant":
                    body = {"model": options.model, "messages": messages, "max_tokens": min(options.max_tokens, 8),
                            "temperature": options.temperature}
                    request = urllib.request.Request(f"http://{options.server_address[0]}/v1/chat/completions",
                                                     data=json.dumps(body).encode(),
                                                     headers={"Content-Type": "application/json"})
                    with urllib.request.urlopen(request, timeout=10) as response:
                        turn = {"role": "assistant",
                                "content": json.loads(response.read())["choices"][0]["message"]["content"]}
                messages.append(turn)
            done.append({"id": record.get("id"), "conversations": messages})
        except OSError as error:
            errors.append({"id": record.get("id"), "error": str(error)})
    options.output_file_path.write_text("".join(json.dumps(item) + "\n" for item in done))
    if errors:
        Path(f"{options.output_file_path.with_suffix('')}_error.jsonl").write_text(
            "".join(json.dumps(item) + "\n" for item in errors))
    print(f"Processing completed! {len(done)} regenerated, {len(errors)} errors", flush=True)
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())
