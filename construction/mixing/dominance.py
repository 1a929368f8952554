"""The scene's defining sounds dominate what is heard (issue 36): the rule the mix applies to every draw,
lowering the support sounds where that makes it hold, or failing the draw."""

from __future__ import annotations

from typing import Any

import numpy as np

from construction.core.record import SceneSound

DOMINANT_SHARE = 0.6  # of the scene's energy, carried by its defining layers alone and under the speech
SUPPORT_CUT_MAX_DB = 20.0  # support may be lowered this much to let the defining sounds dominate


def dominate(sounds: list[SceneSound], tracks: list[np.ndarray], parts: list[Any]) -> dict[str, Any]:
    """The defining sounds dominate what is heard: in each part (the scene alone, the scene under the
    voiced speech), the defining layers carry at least DOMINANT_SHARE of the scene's energy, and every
    defining layer that sounds there is louder than every support layer. Support sounds are lowered
    (together, up to SUPPORT_CUT_MAX_DB) where that makes the rule hold; their gains change in
    `sounds`. Returns the measures, with `fails` set when lowering cannot make it hold (a defining
    sound that is silent in a part next to a sounding support, or defining layers too sparse). A sound
    is its tag: the layers of one tag (a sound's copies from several recordings) count together."""
    energy = [[float(np.mean((t[part] * 10 ** (s.gain_db / 20)) ** 2)) for s, t in zip(sounds, tracks)] for part in parts]
    cut = 1.0  # the support layers' energy factor
    for e in energy:
        d = _by_tag(sounds, e, "defining")
        sup = _by_tag(sounds, e, "support")
        if not sup or not max(sup):
            continue
        sounding = [x for x in d if x > 1e-4 * sum(e)]  # a defining layer silent in this part is not compared
        need = min(0.9 * min(sounding) / max(sup), (sum(d) / DOMINANT_SHARE - sum(d)) / sum(sup)) if sounding else 0.0
        cut = min(cut, need)
    out: dict[str, Any] = {}
    if cut < 10 ** (-SUPPORT_CUT_MAX_DB / 10):
        out["fails"] = True
    elif cut < 1.0:
        out["support_lowered_db"] = round(-10 * np.log10(cut), 2)
        for s in sounds:
            if s.role == "support":
                s.gain_db = round(s.gain_db + 10 * np.log10(cut), 3)
    for name, e in zip(("alone", "under"), energy):
        d = sum(x for s, x in zip(sounds, e) if s.role == "defining")
        sup = sum(x for s, x in zip(sounds, e) if s.role == "support") * min(cut, 1.0)
        out[f"defining_share_{name}"] = round(d / (d + sup), 3) if d + sup > 0 else 0.0
    return out


def _by_tag(sounds: list[SceneSound], energy: list[float], role: str) -> list[float]:
    """The energy of each sound of `role` in a part, its layers summed."""
    out: dict[str, float] = {}
    for s, x in zip(sounds, energy):
        if s.role == role:
            out[s.tag] = out.get(s.tag, 0.0) + x
    return list(out.values())
