import hashlib
import re
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest
from agentrft_wordle import allowed_words, answer_words
from agentrft_wordle.words import license_text

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "build_wordlists.py"

#: Slurs and profanity that must never be answers (three of them were answers in our
#: earlier SCOWL rebuild) and that the sample does not accept as guesses either.
REMOVED = {
    "bitch", "chink", "coons", "craps", "cunts", "dicks", "fagot", "farts",
    "fucks", "kraut", "nappy", "nigga", "pussy", "queer", "shits", "whore",
}  # fmt: skip
#: Vulgar words that are never answers; the sample still accepts them as guesses.
NEVER_ANSWERS = {"horny", "penis", "semen", "sperm"}


def test_lists_are_the_samples_exact_lists() -> None:
    assert (len(answer_words()), len(allowed_words())) == (1923, 11072)
    data = files("agentrft_wordle").joinpath("data")
    digests = {
        name: hashlib.sha256(data.joinpath(name).read_bytes()).hexdigest()[:16]
        for name in ("answers.txt", "allowed_guesses.txt")
    }
    assert digests == {"answers.txt": "e9b406dda2151933", "allowed_guesses.txt": "e112e3188726029c"}
    assert answer_words()[:3] == ("aback", "abate", "abbey")


def test_lists_are_clean_and_every_answer_is_allowed() -> None:
    for words in (answer_words(), allowed_words()):
        assert list(words) == sorted(set(words))
        assert all(re.fullmatch(r"[a-z]{5}", w) for w in words)
    assert set(answer_words()) <= set(allowed_words())


def test_no_slur_or_profanity_is_an_answer_or_a_removed_word_a_guess() -> None:
    assert not (REMOVED | NEVER_ANSWERS) & set(answer_words())
    assert not REMOVED & set(allowed_words())
    assert set(allowed_words()) >= NEVER_ANSWERS


def test_answers_leave_out_inflections_but_keep_headwords() -> None:
    answers = set(answer_words())
    for inflected in ("acing", "abler", "safer", "wider", "tying", "cried", "boxes", "words"):
        assert inflected not in answers
        assert inflected in allowed_words()
    for headword in ("aback", "abyss", "amiss", "thing", "alias", "crane", "sight", "riser"):
        assert headword in answers


def test_scowl_license_ships_with_the_lists() -> None:
    text = license_text()
    assert "Kevin Atkinson" in text and "Permission to use, copy, modify" in text


@pytest.mark.skipif(
    not Path("/usr/share/dict/scowl").is_dir(), reason="SCOWL not installed (apt-get install scowl)"
)
def test_build_script_prints_its_difference_from_the_shipped_lists(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    answers = next(line for line in lines if line.startswith("answers:"))
    allowed = next(line for line in lines if line.startswith("allowed:"))
    assert "shipped 1923" in answers and "shipped 11072" in allowed
    rebuilt = (tmp_path / "answers.txt").read_text(encoding="utf-8").split()
    assert f"rebuild {len(rebuilt)}," in answers
    # The rebuild keeps the sample's removals: no slur or profanity gets in.
    assert not (REMOVED | NEVER_ANSWERS) & set(rebuilt)
    guesses = (tmp_path / "allowed_guesses.txt").read_text(encoding="utf-8").split()
    assert not REMOVED & set(guesses)
    only_rebuilt = set(rebuilt) - set(answer_words())
    only_shipped = set(answer_words()) - set(rebuilt)
    assert f"only in the rebuild {len(only_rebuilt)}, only shipped {len(only_shipped)}" in answers
