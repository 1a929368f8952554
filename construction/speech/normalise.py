"""Text normalisation for TTS: numbers, currency, percentages, ordinals and clock times as words.

Engines read digits and symbols each their own way (or not at all), so every backend speaks the
normalised text, and the synthesize stage records it in provenance. num2words does the wording.
"""
from __future__ import annotations

import re

from num2words import num2words

from construction.core.errors import WorkbenchError


_SCALES = "thousand|million|billion|trillion"
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
# symbol -> (unit singular, plural, subunit singular, plural)
_CURRENCIES = {
    "$": ("dollar", "dollars", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "€": ("euro", "euros", "cent", "cents"),
}
_CURRENCY_RE = re.compile(rf"([$£€])\s?({_NUM})(?:\s?({_SCALES})\b)?", re.IGNORECASE)
_PERCENT_RE = re.compile(rf"({_NUM})\s?%")
_ORDINAL_RE = re.compile(r"\b(\d+)(st|nd|rd|th)\b", re.IGNORECASE)
_TIME_RE = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")
_DOTTED_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+){2,}(?![\w])")  # versions, IP addresses
_MINUS_RE = re.compile(r"(?<![\w.])-(?=\d)")
_NUMBER_RE = re.compile(rf"(?<![\w.])({_NUM})(?![\w])")


def _words(value: str | float, **kwargs: str) -> str:
    """num2words without its hyphens and commas ("forty-two" -> "forty two")."""
    if isinstance(value, str):
        value = value.replace(",", "")
        value = float(value) if "." in value else int(value)
    return re.sub(r"[-,]", " ", num2words(value, lang="en", **kwargs)).replace("  ", " ")


def _number(text: str) -> str:
    plain = text.replace(",", "")
    if "," not in text and "." not in text and len(plain) == 4 and 1100 <= int(plain) <= 2099:
        return _words(int(plain), to="year")  # "1995" reads as a year
    return _words(text)


def _currency(m: re.Match[str]) -> str:
    unit, units, sub, subs = _CURRENCIES[m.group(1)]
    amount, scale = m.group(2).replace(",", ""), m.group(3)
    if scale:  # "$5 million" -> "five million dollars"
        return f"{_words(amount)} {scale.lower()} {units}"
    whole, _, frac = amount.partition(".")
    if frac and len(frac) != 2:  # "$1.5" -> "one point five dollars"
        return f"{_words(amount)} {units}"
    n_whole, n_frac = int(whole), int(frac or 0)
    parts = []
    if n_whole or not n_frac:
        parts.append(f"{_words(n_whole)} {unit if n_whole == 1 else units}")
    if n_frac:
        parts.append(f"{_words(n_frac)} {sub if n_frac == 1 else subs}")
    return " and ".join(parts)


def _time(m: re.Match[str]) -> str:
    hour, minute = int(m.group(1)), int(m.group(2))
    if minute == 0:
        return f"{_words(hour)} o'clock"
    return f"{_words(hour)} {'oh ' if minute < 10 else ''}{_words(minute)}"


def normalize_for_tts(text: str) -> str:
    """Write numbers, currency, percentages, ordinals and clock times as words.

    "$42.50" -> "forty two dollars and fifty cents", "50%" -> "fifty percent", "3rd" -> "third",
    "7:30" -> "seven thirty", "1,250" -> "one thousand two hundred and fifty", "-5" -> "minus five",
    "2.0.1" -> "two dot zero dot one". Digits inside words ("mp3") are left to the engine. Idempotent.
    """
    text = _CURRENCY_RE.sub(_currency, text)
    text = _PERCENT_RE.sub(lambda m: f"{_number(m.group(1))} percent", text)
    text = _ORDINAL_RE.sub(lambda m: _words(int(m.group(1)), to="ordinal"), text)
    text = _TIME_RE.sub(_time, text)
    text = _DOTTED_RE.sub(lambda m: " dot ".join(_words(int(g)) for g in m.group(0).split(".")), text)
    text = _MINUS_RE.sub("minus ", text)
    text = _NUMBER_RE.sub(lambda m: _number(m.group(1)), text)
    return re.sub(r"[ \t]+", " ", text).strip()


def check_pronounceable(text: str) -> None:
    """Raise WorkbenchError when text is empty or has nothing to say (no letters after normalising)."""
    if not text or not text.strip():
        raise WorkbenchError("TTS text is empty")
    if not any(c.isalpha() for c in normalize_for_tts(text)):
        raise WorkbenchError(f"TTS text has no letters to pronounce: {text!r}")
