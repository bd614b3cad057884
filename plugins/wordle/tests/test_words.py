import re
import subprocess
import sys
from pathlib import Path

import pytest
from agentrft_wordle import allowed_words, answer_words
from agentrft_wordle.words import license_text

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "build_wordlists.py"


def test_list_sizes_are_close_to_the_sample() -> None:
    # The public sample ships 1,923 answers and 11,072 allowed guesses.
    assert abs(len(answer_words()) - 1923) <= 0.10 * 1923
    assert abs(len(allowed_words()) - 11072) <= 0.10 * 11072


def test_lists_are_clean_and_every_answer_is_allowed() -> None:
    for words in (answer_words(), allowed_words()):
        assert list(words) == sorted(set(words))
        assert all(re.fullmatch(r"[a-z]{5}", w) for w in words)
    assert set(answer_words()) <= set(allowed_words())


def test_answers_leave_out_inflections_but_keep_headwords() -> None:
    answers = set(answer_words())
    for inflected in (
        "acing",
        "aging",
        "abler",
        "safer",
        "wider",
        "tying",
        "cried",
        "boxes",
        "words",
    ):
        assert inflected not in answers
        assert inflected in allowed_words()
    for headword in ("aback", "abyss", "amiss", "thing", "alias", "crane", "sight"):
        assert headword in answers


def test_scowl_license_ships_with_the_lists() -> None:
    text = license_text()
    assert "Kevin Atkinson" in text and "Permission to use, copy, modify" in text


@pytest.mark.skipif(
    not Path("/usr/share/dict/scowl").is_dir(), reason="SCOWL not installed (apt-get install scowl)"
)
def test_build_script_regenerates_the_shipped_lists() -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert f"{len(answer_words())} answers" in out.stdout
