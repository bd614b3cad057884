"""bench/cpu_sampler.py's llama.cpp runner, run with an interpreter that has
llama-cpp-python (a venv of its own: it builds llama.cpp from source).

Reads a job on stdin: `{"model": GGUF, "lora": GGUF_LORA, "batches": {size: [prompt ids]},
"tokens": N, "threads": T}`; prints one JSON line: tokens/s per batch size and the batch-8
sample (ids and logprobs at temperature 1). Every row of a batch is its own sequence in one
llama.cpp context; the prompts are prefilled together, then each decode call advances every
row by one token; the adapter is loaded at run time (`llama_adapter_lora_init`).
"""

from __future__ import annotations

import ctypes
import json
import sys
import time

import llama_cpp as ll
import numpy as np


def main() -> None:
    job = json.loads(sys.stdin.read())
    ll.llama_backend_init()
    model = ll.llama_model_load_from_file(job["model"].encode(), ll.llama_model_default_params())
    vocab = ll.llama_model_get_vocab(model)
    n_vocab = ll.llama_vocab_n_tokens(vocab)
    adapter = ll.llama_adapter_lora_init(model, job["lora"].encode())
    if not adapter:
        raise SystemExit(f"llama.cpp could not load the LoRA {job['lora']}")
    rates: dict[str, float] = {}
    sample: dict[str, list[list[float]] | list[list[int]]] = {}
    for size, rows in job["batches"].items():
        n = len(rows)
        params = ll.llama_context_default_params()
        params.n_ctx = sum(len(r) for r in rows) + n * job["tokens"] + 256
        params.n_batch = 2048
        params.n_ubatch = 512
        params.n_seq_max = n
        params.n_threads = params.n_threads_batch = job["threads"]
        ctx = ll.llama_init_from_model(model, params)
        adapters = (ctypes.c_void_p * 1)(adapter)
        scales = (ctypes.c_float * 1)(1.0)
        ll.llama_set_adapters_lora(ctx, adapters, 1, scales)
        batch = ll.llama_batch_init(2048, 0, n)
        for attempt in range(2):  # the first run of a size is a warm-up
            ll.llama_memory_clear(ll.llama_get_memory(ctx), True)
            t0 = time.perf_counter()
            ids, lps = generate(ctx, batch, rows, job["tokens"], n_vocab, seed=attempt)
            seconds = time.perf_counter() - t0
        rates[size] = n * job["tokens"] / seconds
        if int(size) == 8:
            sample = {"ids": ids, "logprobs": lps}
        ll.llama_batch_free(batch)
        ll.llama_free(ctx)
    print(json.dumps({"tokens_per_s": rates, "batch8": sample}))


def generate(ctx, batch, rows, tokens, n_vocab, seed):
    n = len(rows)
    rng = [np.random.default_rng(seed * 1000 + i) for i in range(n)]
    last_logits = np.zeros((n, n_vocab), dtype=np.float32)
    # Prefill: pack the prompts into decode calls of up to n_batch tokens; only each prompt's
    # last token asks for logits.
    pending: list[tuple[int, int]] = []  # (row, index in the batch)
    batch.n_tokens = 0

    def flush() -> None:
        if batch.n_tokens == 0:
            return
        if ll.llama_decode(ctx, batch) != 0:
            raise SystemExit("llama_decode failed during prefill")
        for row, j in pending:
            ptr = ll.llama_get_logits_ith(ctx, j)
            last_logits[row] = np.ctypeslib.as_array(ptr, shape=(n_vocab,))
        pending.clear()
        batch.n_tokens = 0

    for row, prompt in enumerate(rows):
        if batch.n_tokens + len(prompt) > 2048:
            flush()
        for pos, tok in enumerate(prompt):
            j = batch.n_tokens
            batch.token[j], batch.pos[j], batch.n_seq_id[j] = tok, pos, 1
            batch.seq_id[j][0] = row
            batch.logits[j] = pos == len(prompt) - 1
            batch.n_tokens += 1
        pending.append((row, batch.n_tokens - 1))
    flush()
    out_ids: list[list[int]] = [[] for _ in rows]
    out_lp: list[list[float]] = [[] for _ in rows]
    positions = [len(p) for p in rows]
    logits = last_logits
    for step in range(tokens):
        logp = logits - logits.max(-1, keepdims=True)
        logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
        cdf = np.cumsum(np.exp(logp), axis=-1)
        picks = [int(np.searchsorted(cdf[i], rng[i].random() * cdf[i, -1])) for i in range(n)]
        batch.n_tokens = 0
        for i, tok in enumerate(picks):
            tok = min(tok, n_vocab - 1)
            out_ids[i].append(tok)
            out_lp[i].append(float(logp[i, tok]))
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = tok, positions[i], 1
            batch.seq_id[i][0] = i
            batch.logits[i] = True
            positions[i] += 1
        batch.n_tokens = n
        if step == tokens - 1:
            break
        if ll.llama_decode(ctx, batch) != 0:
            raise SystemExit("llama_decode failed while decoding")
        logits = np.ctypeslib.as_array(ll.llama_get_logits(ctx), shape=(n, n_vocab)).copy()
    return out_ids, out_lp


if __name__ == "__main__":
    main()
