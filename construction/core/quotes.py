"""Curly apostrophes and quotes made straight, for text compared by its words: ASR transcripts against
the script (WER) and model answers against refusal phrases (the keyword judge). One table, so both read
"I’m" as "I'm"."""

STRAIGHT_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'", "`": "'",
                                 "\u201c": '"', "\u201d": '"'})
