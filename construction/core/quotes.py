"""Curly quotes and apostrophes as straight ones, so texts that differ only in typography compare equal."""

STRAIGHT_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'", "`": "'",
                                 "\u201c": '"', "\u201d": '"'})
