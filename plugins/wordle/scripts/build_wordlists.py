#!/usr/bin/env python3
"""Rebuild the Wordle word lists from SCOWL 2020.12.07 and print how they differ from the
shipped ones.

    apt-get install -y scowl
    python plugins/wordle/scripts/build_wordlists.py                 # print the difference
    python plugins/wordle/scripts/build_wordlists.py --out build/    # ...and write the build

The plugin ships the public sample's exact lists (1,923 answers, 11,072 allowed guesses; see
the plugin README); this tool does not decide what ships. It shows how close a rebuild from
SCOWL comes, and what a list built for another SCOWL release would change. Rules (design
note wordle.md, following the sample):
- answers: english + american words at SCOWL size <= 35, exactly five letters a-z, minus
  inflected forms, minus offensive words. The sample used AGID for inflections, which Debian
  does not package, so inflections are found with suffix rules over the same lists:
    * plurals and verb forms: removing -s, -es, -ies->y, -ied->y, -ed or -d gives another
      listed word;
    * -ing forms: removing -ing (optionally restoring -e, undoubling a consonant, or
      -ying -> -ie) gives a listed word that is a verb (it has an -s/-es and an -ed/-d form);
    * comparatives: removing -er / -r / -ier->y gives a listed word whose superlative
      (-est / -st / -iest) is in SCOWL at size <= 80.
  The sample also drops words by a hand-made list that is not published; the difference
  printed here is mostly those.
- allowed guesses: english + american words at size <= 80, exactly five letters a-z, minus
  offensive words, plus every answer.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

SCOWL_DIR = Path("/usr/share/dict/scowl")
DATA_DIR = Path(__file__).resolve().parents[1] / "src" / "agentrft_wordle" / "data"
SHIPPED = {"answers": "answers.txt", "allowed": "allowed_guesses.txt"}
SIZES = (10, 20, 35, 40, 50, 55, 60, 70, 80, 95)
CATEGORIES = ("english-words", "american-words")
FIVE = re.compile(r"[a-z]{5}")

#: Slurs and profanity the sample removes from both lists.
OFFENSIVE = frozenset(
    {
        "bitch", "chink", "coons", "craps", "cunts", "dicks", "fagot", "farts",
        "fucks", "kraut", "nappy", "nigga", "pussy", "queer", "shits", "whore",
    }
)  # fmt: skip
#: Vulgar words that are never answers but stay accepted as guesses (as in the sample).
NOT_ANSWERS = frozenset({"horny", "penis", "semen", "sperm"})


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


def build() -> dict[str, list[str]]:
    common = load(35)
    big = load(80)
    raw = sorted(w for w in common if FIVE.fullmatch(w))
    answers = [
        w
        for w in raw
        if w not in OFFENSIVE
        and w not in NOT_ANSWERS
        and not is_plain_inflection(w, common)
        and not is_ing_form(w, common)
        and not is_comparative(w, common, big)
    ]
    allowed = sorted({w for w in big if FIVE.fullmatch(w) and w not in OFFENSIVE} | set(answers))
    return {"answers": answers, "allowed": allowed}


def shipped(data_dir: Path = DATA_DIR) -> dict[str, list[str]]:
    return {
        kind: (data_dir / name).read_text(encoding="utf-8").split()
        for kind, name in SHIPPED.items()
    }


def difference(built: dict[str, list[str]], ships: dict[str, list[str]]) -> list[str]:
    """Lines describing how `built` differs from `ships`, per list."""
    lines = []
    for kind in SHIPPED:
        new, old = set(built[kind]), set(ships[kind])
        lines.append(
            f"{kind}: rebuild {len(new)}, shipped {len(old)}, in both {len(new & old)}, "
            f"only in the rebuild {len(new - old)}, only shipped {len(old - new)}"
        )
        for label, words in (("  only in the rebuild:", new - old), ("  only shipped:", old - new)):
            if words:
                lines.append(f"{label} {' '.join(sorted(words))}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, help="also write the rebuild here (answers.txt, allowed_guesses.txt)"
    )
    args = parser.parse_args(argv)
    built = build()
    print("\n".join(difference(built, shipped())))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        for kind, name in SHIPPED.items():
            tmp = args.out / (name + ".partial")
            tmp.write_text("\n".join(built[kind]) + "\n", encoding="utf-8")
            tmp.replace(args.out / name)
        print(f"wrote the rebuild to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
