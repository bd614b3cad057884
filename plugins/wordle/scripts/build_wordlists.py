#!/usr/bin/env python3
"""Regenerate the Wordle word lists from SCOWL 2020.12.07 (Debian package `scowl`).

    apt-get install -y scowl
    python plugins/wordle/scripts/build_wordlists.py            # writes the package data
    python plugins/wordle/scripts/build_wordlists.py --check    # fails if the shipped lists differ

Rules (design note wordle.md, following the managed service's public sample):
- answers: english + american words at SCOWL size <= 35, exactly five letters a-z, minus
  inflected forms, minus offensive words. The sample used AGID for inflections, which Debian
  does not package, so inflections are found with suffix rules over the same lists:
    * plurals and verb forms: removing -s, -es, -ies->y, -ied->y, -ed or -d gives another listed word;
    * -ing forms: removing -ing (optionally restoring -e, undoubling a consonant, or
      -ying -> -ie) gives a listed word that is a verb (it has an -s/-es and an -ed/-d form);
    * comparatives: removing -er / -r / -ier->y gives a listed word whose superlative
      (-est / -st / -iest) is in SCOWL at size <= 80.
- allowed guesses: english + american words at size <= 80, exactly five letters a-z, no
  inflection filter, plus every answer.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

SCOWL_DIR = Path("/usr/share/dict/scowl")
SCOWL_COPYRIGHT = Path("/usr/share/doc/scowl/copyright")
DATA_DIR = Path(__file__).resolve().parents[1] / "src" / "agentrft_wordle" / "data"
SIZES = (10, 20, 35, 40, 50, 55, 60, 70, 80, 95)
CATEGORIES = ("english-words", "american-words")
FIVE = re.compile(r"[a-z]{5}")

# Slurs and vulgar words among the size<=35 five-letter words; kept as guesses, never answers.
OFFENSIVE = frozenset({"bitch", "fagot", "horny", "penis", "pussy", "semen", "sperm", "whore"})


def load(max_size: int) -> set[str]:
    words: set[str] = set()
    for category in CATEGORIES:
        for size in SIZES:
            if size > max_size:
                continue
            path = SCOWL_DIR / f"{category}.{size}"
            if not path.exists():
                raise SystemExit(
                    f"{path} is missing: install SCOWL with `apt-get install -y scowl`"
                )
            words.update(line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return words


def is_plain_inflection(word: str, listed: set[str]) -> bool:
    stems = []
    if word.endswith("s"):
        stems.append(word[:-1])
    if word.endswith("es"):
        stems.append(word[:-2])
    if word.endswith("ies"):
        stems.append(word[:-3] + "y")
    if word.endswith("ied"):
        stems.append(word[:-3] + "y")
    if word.endswith("ed"):
        stems.append(word[:-2])
    if word.endswith("d"):
        stems.append(word[:-1])
    return any(s in listed for s in stems)


def is_ing_form(word: str, listed: set[str]) -> bool:
    if not word.endswith("ing"):
        return False
    base = word[:-3]
    stems = [base, base + "e"]
    if len(base) >= 2 and base[-1] == base[-2]:
        stems.append(base[:-1])
    if base.endswith("y"):
        stems.append(base[:-1] + "ie")
    return any(
        s in listed
        and (s + "s" in listed or s + "es" in listed)
        and (s + "ed" in listed or s + "d" in listed)
        for s in stems
    )


def is_comparative(word: str, listed: set[str], big: set[str]) -> bool:
    if not word.endswith("er"):
        return False
    forms = [(word[:-2], word[:-2] + "est"), (word[:-1], word[:-1] + "st")]
    if word.endswith("ier"):
        forms.append((word[:-3] + "y", word[:-3] + "iest"))
    return any(base in listed and sup in big for base, sup in forms)


def build() -> tuple[list[str], list[str]]:
    common = load(35)
    big = load(80)
    raw = sorted(w for w in common if FIVE.fullmatch(w))
    answers = [
        w
        for w in raw
        if w not in OFFENSIVE
        and not is_plain_inflection(w, common)
        and not is_ing_form(w, common)
        and not is_comparative(w, common, big)
    ]
    allowed = sorted({w for w in big if FIVE.fullmatch(w)} | set(answers))
    return answers, allowed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped lists")
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="output folder")
    args = parser.parse_args(argv)
    answers, allowed = build()
    texts = {"answers.txt": "\n".join(answers) + "\n", "allowed.txt": "\n".join(allowed) + "\n"}
    if args.check:
        stale = [n for n, t in texts.items() if (args.out / n).read_text(encoding="utf-8") != t]
        if stale:
            print(f"out of date: {', '.join(stale)}; rerun without --check", file=sys.stderr)
            return 1
        print(f"up to date: {len(answers)} answers, {len(allowed)} allowed guesses")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        tmp = args.out / (name + ".partial")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(args.out / name)
    shutil.copyfile(SCOWL_COPYRIGHT, args.out / "SCOWL-COPYRIGHT.txt")
    print(f"wrote {len(answers)} answers and {len(allowed)} allowed guesses to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
