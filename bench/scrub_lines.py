"""What the secret scrubber costs the trajectory writer, per JSONL record.

Every trajectory line goes through `agentrft.redact.scrub_json_line` before it is written.
Three shapes of record, none holding a secret (the common case: the line is returned as
is): a short CPU-demo episode, a GPU-scale one dominated by token ids and logprobs, and a
text-heavy one (a long tool reply). Then one record that does hold a secret (the slow
path: decode, scrub, re-encode). Prints the best of `--repeat` timings; asserts nothing.

    .venv/bin/python bench/scrub_lines.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import random
import time

from agentrft.redact import scrub_json_line


def records() -> dict[str, str]:
    rng = random.Random(0)
    turn = {
        "prompt_token_ids": [rng.randrange(150_000) for _ in range(20_000)],
        "completion_token_ids": [rng.randrange(150_000) for _ in range(500)],
        "logprobs": [-rng.random() for _ in range(500)],
    }
    talk = [{"role": "user", "content": "Guess the word. You have 6 guesses left. " * 20}]
    return {
        "short (CPU demo)": json.dumps(
            {"messages": talk[:1], "turns": [{"completion_token_ids": list(range(40))}]}
        ),
        "token ids (GPU scale)": json.dumps({"messages": talk * 6, "turns": [turn] * 5}),
        "text-heavy tool reply": json.dumps(
            {"messages": [{"role": "tool", "content": 'receipt 12.50 EUR "dinner"; ' * 4000}]}
        ),
        "holding a bearer token": json.dumps(
            {
                "messages": [{"role": "tool", "content": "Authorization: Bearer tok-12345678"}],
                "turns": [turn],
            }
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for name, line in records().items():
        n = max(1, int(2e6 // len(line)))  # about 2 MB scrubbed per timing
        best = min(_time(line, n) for _ in range(args.repeat))
        mb = len(line) / 1e6
        print(f"{name:24s} {len(line) / 1e3:8.1f} KB  {best * 1e3:8.3f} ms  {mb / best:6.0f} MB/s")


def _time(line: str, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        scrub_json_line(line)
    return (time.perf_counter() - t0) / n


if __name__ == "__main__":
    main()
