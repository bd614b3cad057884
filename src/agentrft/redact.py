"""Secrets out of everything agentrft writes: one scrubber that every writer calls.

What counts as a secret:

- a URL's password (`http://user:secret@host` -> `http://user:***@host`) and credential-like
  query parameters (`?api_key=...`, `X-Amz-Signature=...`);
- `Bearer` / `Basic` credentials, and `--api-key VALUE` / `api_key=VALUE` style text;
- AWS access key ids (`AKIA...`, `ASIA...`) and tokens shaped like OpenAI's or Anthropic's
  (`sk-...`), Hugging Face's (`hf_...`) or GitHub's (`ghp_...`);
- the value of any dict key, or of any command-line flag in a list, named like a credential
  (`api_key`, `Authorization`, `hf_token`, `--api-key`, ...);
- every value given to `register_secret` (the policy clients register their keys and
  tokens), and the value of every environment variable named like a credential
  (`OPENAI_API_KEY`, `AWS_SECRET_ACCESS_KEY`, `HF_TOKEN`, ...): a server that echoes a key
  back cannot put it in a trajectory.

Writers: trajectory JSONL (`agentrft.trajectory`), evaluation reports
(`agentrft.evaluation.write_report`), the local run's config.yaml, run.json and MLflow params;
log records, through `ScrubFilter` on the CLI's and the runtime app's log handlers.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import traceback
from typing import Any, TypeVar

T = TypeVar("T")

#: What a secret is replaced with.
REDACTED = "***"

#: Shorter values are never treated as secrets by value ("EMPTY", "true", "x" would
#: otherwise be scrubbed from every file).
MIN_SECRET_LENGTH = 8

_CREDENTIAL = (
    r"(?:api[_-]?key|access[_-]?key|secret[_-]?key|client[_-]?secret|private[_-]?key"
    r"|password|passwd|token|authorization|cookie|credentials?|signature)"
)
#: A name (dict key, env variable, flag) that holds a credential: the word on its own or
#: between non-letters, so `hf_token` and `X-Api-Key` match but `max_tokens` does not.
_CREDENTIAL_NAME = re.compile(rf"(?:^|[^a-z]){_CREDENTIAL}(?:$|[^a-z])", re.IGNORECASE)
_FLAG = re.compile(rf"^--?[\w-]*{_CREDENTIAL}$", re.IGNORECASE)
_VALUE = r"(?!\*\*\*)[^\s\"',;&\\]"  # a credential value in text (never one already scrubbed)
#: In text, names that say outright that a secret follows: any value after them goes.
_SURE_CREDENTIAL = (
    r"(?:api[_-]?key|access[_-]?key|secret[_-]?key|client[_-]?secret|private[_-]?key"
    r"|password|passwd|authorization"
    r"|(?<![a-z])(?:access|refresh|auth|api|id|session|bearer|oauth|csrf|hf|gh|github)[_-]?token)"
)
#: Credential words that prose uses too ("next token: found", "signature: mine"): only a
#: value that looks like a secret goes, by the rule for Bearer tokens (a digit and 8+
#: characters, or 24+). Every failed try stops within 24 characters, so scrubbing stays
#: linear in the text's length.
_PROSE_CREDENTIAL = r"(?:token|cookie|credentials?|signature)"
_SECRET_LOOKING = rf"(?:(?={_VALUE}*\d){_VALUE}{{8,}}|{_VALUE}{{24,}})"
# A query parameter's name: it stops at the next separator (`?`, `&`, `;`), so a text full of
# separators is scanned once, not once per separator (that made long replies quadratic).
_PARAM_NAME = r"[^=&#;?\s\"'\\]"

# Each pattern starts at a literal or a short alternation, never at "any word": they run on
# every trajectory line written (~MBs at GPU scale), and a leading `[\w-]*` made them 50x
# slower.
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # scheme://user:password@host -> scheme://user:***@host
    (re.compile(r"(://[^\s/:@?#\"'\\]*):[^\s/@?#\"'\\]+@"), r"\1:***@"),
    # ?api_key=...&X-Amz-Signature=...
    (
        re.compile(rf"([?&;]{_PARAM_NAME}*{_CREDENTIAL}{_PARAM_NAME}*=){_VALUE}+", re.I),
        r"\1***",
    ),
    # Authorization schemes; the token must look like one (a digit, or 24+ characters).
    (
        re.compile(
            r"\b(Bearer|Basic)\s+(?:(?=[\w\-.~+/]*\d)[\w\-.~+/]{8,}|[\w\-.~+/]{24,})=*", re.I
        ),
        r"\1 ***",
    ),
    # api_key=VALUE, password: VALUE, "hf_token": "VALUE"
    (
        re.compile(
            rf"({_SURE_CREDENTIAL}[\"']?\s*[:=]\s*[\"']?)(?!(?:Bearer|Basic)\s){_VALUE}{{4,}}",
            re.I,
        ),
        r"\1***",
    ),
    # token: VALUE, signature=VALUE, when VALUE looks like a secret
    (
        re.compile(
            rf"({_PROSE_CREDENTIAL}[\"']?\s*[:=]\s*[\"']?)(?!(?:Bearer|Basic)\s){_SECRET_LOOKING}",
            re.I,
        ),
        r"\1***",
    ),
    # --api-key VALUE (the value is not the next flag)
    (re.compile(rf"(--[\w-]*?{_CREDENTIAL}\s+)(?!-){_VALUE}{{4,}}", re.I), r"\1***"),
    # Key shapes that need no context: AWS access key ids; OpenAI/Anthropic, Hugging Face
    # and GitHub tokens.
    (re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"), REDACTED),
    (re.compile(r"\b(?:sk-[\w-]{16,}|hf_[A-Za-z0-9]{30,}|gh[pousr]_[A-Za-z0-9]{30,})"), REDACTED),
)

# Cheap supersets of `_PATTERNS`, searched in the lower-cased text: case-insensitive
# matching and a leading `\b` cost Python's `re` 5-15x, and nearly every text written holds
# no secret. Only a text one of these finds goes through `_PATTERNS`.
_MAY_MATCH: tuple[re.Pattern[str], ...] = (
    re.compile(r"://[^\s/:@?#\"'\\]*:[^\s/@?#\"'\\]+@"),
    re.compile(rf"[?&;]{_PARAM_NAME}*{_CREDENTIAL}"),
    re.compile(r"(?:bearer|basic)\s"),
    re.compile(rf"{_CREDENTIAL}[\"']?\s*[:=]"),
    re.compile(rf"--[\w-]*?{_CREDENTIAL}\s"),
    re.compile(r"(?:akia|asia|abia|acca)[a-z0-9]{16}"),
    re.compile(r"(?:sk-[\w-]{16}|hf_[a-z0-9]{30}|gh[pousr]_[a-z0-9]{30})"),
)
#: A JSON string, and whether it is a key whose value is a string (`"k": "`).
_JSON_STRING = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"(?=(\s*:\s*")?)')

_registered: set[str] = set()
_lock = threading.Lock()


def register_secret(*values: str | None) -> None:
    """Remember `values` (API keys, tokens) so every writer scrubs them (for this process)."""
    with _lock:
        _registered.update(v for v in values if v and len(v) >= MIN_SECRET_LENGTH)


def secret_values() -> list[str]:
    """The registered secrets and credential-named environment values, longest first."""
    env = {
        v
        for k, v in os.environ.items()
        if len(v) >= MIN_SECRET_LENGTH and _CREDENTIAL_NAME.search(k)
    }
    with _lock:
        found = env | _registered
    return sorted(found, key=len, reverse=True)


def is_credential_name(name: str) -> bool:
    """Whether a key, header, flag or variable named `name` holds a credential."""
    return bool(_CREDENTIAL_NAME.search(name))


def scrub_text(text: str, secrets: list[str] | None = None) -> str:
    """`text` with every secret (see the module docstring) replaced by `***`.

    `secrets` defaults to `secret_values()`; pass it to scrub many strings at once.
    """
    for secret in secret_values() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    lower = text.lower()
    if any(p.search(lower) for p in _MAY_MATCH):
        for pattern, replacement in _PATTERNS:
            text = pattern.sub(replacement, text)
    return text


def scrub(value: T) -> T:
    """A copy of JSON-like data (dicts, lists, tuples, strings) with secrets replaced.

    Strings go through `scrub_text`; a string under a credential-named key, or after a
    credential-named flag in a list (`["--api-key", "sk-..."]`), is replaced whole.
    """
    return _scrub(value, secret_values())  # type: ignore[no-any-return]


def _scrub(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return scrub_text(value, secrets)
    if isinstance(value, dict):
        return {
            k: REDACTED
            if isinstance(v, str) and v and isinstance(k, str) and is_credential_name(k)
            else _scrub(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        # Trajectories hold long lists of token ids and logprobs: numbers pass untouched.
        out = [v if v.__class__ in _PLAIN else _scrub(v, secrets) for v in value]
        for i in range(1, len(out)):
            prev, cur = value[i - 1], value[i]
            if prev.__class__ is str and cur.__class__ is str and cur and _FLAG.match(prev):
                out[i] = REDACTED
        return tuple(out) if isinstance(value, tuple) else out
    return value


_PLAIN = frozenset({int, float, bool, type(None)})


def scrub_json_line(line: str) -> str:
    """One JSON document (a JSONL record) with secrets replaced, re-serialised compactly.

    Only the document's strings are searched first (a trajectory is mostly numbers): a
    record without secrets, the common case, is returned as is, byte for byte. Otherwise
    it is decoded and scrubbed value by value, so a replacement can never break the
    JSON's escaping.
    """
    secrets = secret_values()
    strings = []
    for raw, string_value in _JSON_STRING.findall(line):
        text = json.loads(f'"{raw}"') if "\\" in raw else raw
        if (string_value and is_credential_name(text)) or _FLAG.match(text):
            break  # `"api_key": "..."`, `["--api-key", "..."]`: the value goes, whatever it is
        strings.append(text)
    else:
        joined = "\n".join(strings)
        if scrub_text(joined, secrets) == joined:
            return line
    data = json.loads(line)
    scrubbed = _scrub(data, secrets)
    if scrubbed == data:  # a false alarm of the quick search
        return line
    return json.dumps(scrubbed, ensure_ascii=False, separators=(",", ":"))


def restore_redacted(saved: Any, given: Any) -> tuple[Any, list[str]]:
    """Put back the secrets a saved, scrubbed structure lost, from `given`: the same
    structure as the user passes it now (a resumed run's config, say).

    Where a saved value holds `***`, the given value replaces it if it scrubs to exactly
    the saved one. Returns the restored structure and the dotted paths left redacted.
    """
    missing: list[str] = []

    def walk(saved: Any, given: Any, path: str, key: str) -> Any:
        if not _holds_redacted(saved) or saved == given:
            return saved
        if isinstance(saved, dict) and isinstance(given, dict):
            return {
                k: walk(v, given.get(k), f"{path}.{k}" if path else str(k), str(k))
                for k, v in saved.items()
            }
        if given is not None and scrub({key: given})[key] == saved:
            return given
        missing.append(path)
        return saved

    return walk(saved, given, "", ""), missing


def _holds_redacted(value: Any) -> bool:
    if isinstance(value, str):
        return REDACTED in value
    if isinstance(value, dict):
        return any(_holds_redacted(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_redacted(v) for v in value)
    return False


class ScrubFilter(logging.Filter):
    """A log-handler filter that scrubs each record before it is written: the formatted
    message (its args merged in, so a secret split between format and args is caught too),
    the exception text and the stack text.

    Put it on handlers, not loggers: a logger's filters skip records propagated from its
    children, a handler's see every record it writes. The record is changed in place, so
    handlers after this one see the scrubbed text as well.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = secret_values()
        try:
            message = record.getMessage()
        except Exception:  # bad format args: logging would print its own error instead
            message = f"{record.msg} {record.args!r}"
        record.msg, record.args = scrub_text(message, secrets), None
        if record.exc_info and not record.exc_text:
            record.exc_text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        if record.exc_text:
            record.exc_text = scrub_text(record.exc_text, secrets)
        if record.stack_info:
            record.stack_info = scrub_text(record.stack_info, secrets)
        return True
