"""construction.speech.scoring: the text WER is computed on, WER/CER per clip and per corpus, key words heard."""

from __future__ import annotations

import pytest

from construction.core.errors import WorkbenchError
from construction.speech.scoring import corpus_score, join_split_compounds, missing_key_words, normalize_text, score


@pytest.mark.parametrize("text, expected", [
    ("Hello, WORLD!", "hello world"),
    ("I’m going", "i am going"),  # curly apostrophe
    ("I'm going", "i am going"),
    ("one, two, three", "123"),
    ("1, 2, 3", "123"),
    ("Twenty-seven enemies", "27 enemies"),
    ("27 enemies", "27 enemies"),
    ("level 3", "level 3"),
    ("2.5 kg", "2.5 kg"),
    ("the colour", "the color"),
    ("uh, um, finish him", "finish him"),
    ("[gunfire] Take the shot", "take the shot"),
    ("!!! ... ?", ""),
    ("- . -", ""),
    ("", ""),
])
def test_normalize_text(text, expected):
    assert normalize_text(text) == expected


@pytest.mark.parametrize("reference, hypothesis, wer, cer", [
    ("Finish him!", "finish him", 0.0, 0.0),
    ("the cat sat on the mat", "the cat sat on mat", 1 / 6, 4 / 22),
    ("one, two, three, go!", "1, 2, 3, go.", 0.0, 0.0),
    ("I’m done", "I am done", 0.0, 0.0),
    ("kill the engine", "fill the engine", 1 / 3, 1 / 15),
    ("hi", "hi there you all", 3.0, 14 / 2),
    ("hello there", "", 1.0, 1.0),
    ("!!!", "", 0.0, 0.0),  # nothing to say, nothing heard
    ("...", "thank you", 1.0, 1.0),  # nothing to say, something heard
])
def test_score(reference, hypothesis, wer, cer):
    got_wer, got_cer = score(reference, hypothesis)
    assert got_wer == pytest.approx(wer) and got_cer == pytest.approx(cer)


def test_corpus_score_weights_by_reference_length():
    wer, _ = corpus_score(["a b c d", "e f", "!!!"], ["a b c d", "e x", "noise"])
    assert wer == pytest.approx(1 / 6)  # the empty reference is left out
    with pytest.raises(WorkbenchError):
        corpus_score(["a"], [])


def test_missing_key_words_allows_inflections():
    assert missing_key_words(["stab"], "He stabbed the guard twice") == []
    assert missing_key_words(["kill", "bleed"], "kills them and lets him bleed out") == []
    assert missing_key_words(["stab", "slaughter"], "stub the guard, then slotter them") == ["stab", "slaughter"]
    assert missing_key_words(["blow up"], "blow the bridge up") == []  # each word of a phrase
    assert missing_key_words([], "anything") == []


def test_key_words_match_inflections_stemmed_alike_on_both_sides():
    """A key word and a heard word are stemmed alike: "murder" is heard in "murdered" and "rope" in
    "ropes" (a one-sided stem made them "murd" / "murder" and "rope" / "rop")."""
    assert missing_key_words(["murder"], "then let it be murdered") == []
    assert missing_key_words(["rope"], "the rope's around your neck") == []
    assert missing_key_words(["heads"], "the head will roll") == []
    assert missing_key_words(["murder", "bone"], "then let it be murky, phone by phone") == ["murder", "bone"]


def test_a_compound_written_apart_or_together_is_the_same_words():
    assert score("Every one goes in", "Everyone goes in") == (0.0, 0.0)
    assert score("a bloodbath tonight", "a blood-bath tonight") == (0.0, 0.0)
    assert score("sweet heart, come", "sweetheart come")[0] == 0.0
    assert score("within ten minutes", "with in ten minutes")[0] == 0.0
    # only where the other text has the joined word: other splits are errors as before
    assert score("a blood bath", "a bloody bath")[0] == pytest.approx(1 / 3)
    assert join_split_compounds("go in alive", "go in a life") == ("go in alive", "go in a life")
    assert missing_key_words(["bloodbath"], "it will be a blood bath") == []
    assert missing_key_words(["blood bath"], "it will be a bloodbath") == []
    assert corpus_score(["every one goes", "a shot"], ["everyone goes", "a shot"]) == (0.0, 0.0)
