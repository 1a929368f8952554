"""WER scoring: how far a transcript is from its script, after both are normalised alike.

The WER stage (construction.wer) keeps or rejects a sample by these numbers and the key-word check;
the speed measurements (perf/bench_asr.py) use them too. They depend only on the two texts, not on
the ASR backend that made the transcript (construction.speech.asr).
"""

from __future__ import annotations

import re

from construction.core.errors import WorkbenchError
from construction.core.quotes import STRAIGHT_QUOTES

# A lone digit (not part of a larger number, decimal, time, ordinal or percentage)
_LONE_DIGIT = re.compile(r"(?<![\w.,:/$£€])(\d)(?![\w%]|[.,:/]\d)")
_DIGIT_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_normalizer = None


def normalize_text(text: str) -> str:
    """The text WER is computed on.

    1. Curly apostrophes and quotes become straight ones (Whisper's normaliser would otherwise split
       "I’m" into "i m" while "I'm" becomes "i am").
    2. A lone digit becomes its word ("1, 2, 3" -> "one, two, three"), so spoken and written digit
       runs normalise alike (the normaliser joins "one two three" into "123" but leaves "1 2 3").
    3. Whisper's EnglishTextNormalizer (package whisper-normalizer): lower case, punctuation and
       bracketed text removed, spelled numbers to digits ("twenty seven" -> "27"), contractions
       expanded, British spellings to American, fillers ("uh", "um") removed.
    4. Tokens with no letter or digit left (a stray "." or "-") are dropped.
    """
    global _normalizer
    if _normalizer is None:
        from whisper_normalizer.english import EnglishTextNormalizer

        _normalizer = EnglishTextNormalizer()
    text = _LONE_DIGIT.sub(lambda m: _DIGIT_WORDS[int(m.group(1))], text.translate(STRAIGHT_QUOTES))
    return " ".join(t for t in _normalizer(text).split() if any(c.isalnum() for c in t))


def _forms(word: str) -> set[str]:
    """The word and the stems it may be an inflection of ("stabbed" -> stab, "ropes" -> rope and rop,
    "murdered" -> murder), so an inflection still counts as heard. A key word and a heard word match
    when their forms meet: both sides are stemmed alike, so "murder" matches "murdered" and "rope"
    matches "ropes" (a one-sided cut made "murder" -> "murd" and "ropes" -> "rop")."""
    forms = {word}
    for suffix in ("ing", "ed", "es", "s", "er"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            forms.add(stem)
            if len(stem) > 3 and stem[-1] == stem[-2]:  # "stabb" -> "stab"
                forms.add(stem[:-1])
    return forms


def join_split_compounds(reference: str, hypothesis: str) -> tuple[str, str]:
    """Two normalised texts with a compound written as one word in one and as two in the other
    ("bloodbath" / "blood bath", "everyone" / "every one", "sweetheart" / "sweet heart"; the normaliser
    has already turned a hyphen into a space) written as one word in both: the same letters in the same
    order, spoken the same, so not an error. Anything else is left as it is."""
    def join(text: str, words: set[str]) -> str:
        tokens, out, i = text.split(), [], 0
        while i < len(tokens):
            if i + 1 < len(tokens) and tokens[i] + tokens[i + 1] in words:
                out.append(tokens[i] + tokens[i + 1])
                i += 2
            else:
                out.append(tokens[i])
                i += 1
        return " ".join(out)

    ref_words, hyp_words = set(reference.split()), set(hypothesis.split())
    return join(reference, hyp_words - ref_words), join(hypothesis, ref_words - hyp_words)


def missing_key_words(key_words: list[str], transcript: str) -> list[str]:
    """The key words (after normalize_text, each of their words) not found in the transcript, allowing
    inflections and a compound written apart or together; [] when every one was heard."""
    said = normalize_text(transcript)
    missing = []
    for key in key_words:
        words = normalize_text(key).split()
        _, joined = join_split_compounds("".join(words), said)  # "blood bath" heard for "bloodbath"
        heard = {form for w in said.split() + joined.split() for form in _forms(w)}
        if not (all(_forms(w) & heard for w in words) or _forms("".join(words)) & heard):
            missing.append(key)
    return missing


def score(reference: str, hypothesis: str) -> tuple[float, float]:
    """(WER, CER) of a transcript against its script, as fractions (0.25 = 25 %).

    Both texts go through normalize_text, then join_split_compounds; WER = (substitutions + deletions + insertions) / words in
    the normalised reference (jiwer), CER the same over characters (spaces included). WER can exceed
    1 when the transcript adds words. If the normalised reference is empty (a script of only
    punctuation or fillers), both are 0.0 when the normalised transcript is empty too and 1.0 when it
    is not.
    """
    import jiwer

    ref, hyp = join_split_compounds(normalize_text(reference), normalize_text(hypothesis))
    if not ref:
        return (0.0, 0.0) if not hyp else (1.0, 1.0)
    if not hyp:
        return 1.0, 1.0
    return float(jiwer.wer(ref, hyp)), float(jiwer.cer(ref, hyp))


def corpus_score(references: list[str], hypotheses: list[str]) -> tuple[float, float]:
    """Corpus (WER, CER): total errors over total reference words / characters, normalised as in
    score(); pairs whose normalised reference is empty are left out."""
    import jiwer

    if len(references) != len(hypotheses):
        raise WorkbenchError(f"{len(references)} references but {len(hypotheses)} hypotheses")
    pairs = [join_split_compounds(normalize_text(r), normalize_text(h)) for r, h in zip(references, hypotheses)]
    pairs = [(r, h) for r, h in pairs if r]
    if not pairs:
        raise WorkbenchError("no reference has any words left after normalisation")
    refs, hyps = [r for r, _ in pairs], [h for _, h in pairs]
    return float(jiwer.wer(refs, hyps)), float(jiwer.cer(refs, hyps))
