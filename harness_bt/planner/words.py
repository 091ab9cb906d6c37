"""Instructions and templates as words: lower case, no punctuation or articles, plurals
made singular, and a few synonyms folded onto one word (pick up / lift / grab -> ``pick``;
into / inside -> ``in``; all / each -> ``every``; metres -> ``m``), so that a template written
once matches the common ways of saying it. Objects are named by their words (``red_cube``,
label "red cube", colour red, shape cube)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["NUMBER", "normalise", "object_words", "singular"]

#: a number as written in an instruction (``-0.05``, ``.1``, ``3``)
NUMBER = re.compile(r"^-?(?:\d+(?:\.\d*)?|\.\d+)$")
_TOKEN = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)|[a-z]+")

#: words that carry no meaning for choosing a task
_FILLERS = frozenset({"the", "a", "an", "please", "kindly", "robot", "up", "then", "now",
                      "carefully", "gently", "just"})

#: phrases (longest first) folded onto one canonical word, or dropped (empty)
_PHRASES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = tuple(sorted((
    (("can", "you"), ()), (("could", "you"), ()), (("would", "you"), ()),
    (("for", "me"), ()), (("i", "want", "you", "to"), ()),
    (("pick",), ("pick",)), (("lift",), ("pick",)), (("grab",), ("pick",)),
    (("grasp",), ("pick",)), (("raise",), ("pick",)), (("take",), ("pick",)),
    (("place",), ("put",)), (("set",), ("put",)), (("drop",), ("put",)),
    (("stick",), ("put",)), (("lay",), ("put",)),
    (("shift",), ("move",)), (("slide",), ("move",)), (("displace",), ("move",)),
    (("translate",), ("move",)), (("push",), ("move",)),
    (("into",), ("in",)), (("inside",), ("in",)), (("in", "to"), ("in",)),
    (("within",), ("in",)),
    (("onto",), ("on",)), (("on", "to"), ("on",)), (("on", "top", "of"), ("on",)),
    (("atop",), ("on",)), (("upon",), ("on",)), (("over",), ("on",)),
    (("all",), ("every",)), (("each",), ("every",)), (("every", "of"), ("every",)),
    (("metre",), ("m",)), (("meter",), ("m",)),
    (("block",), ("cube",)),
    (("gray",), ("grey",)),
), key=lambda item: -len(item[0])))

#: words whose final ``s`` is not a plural
_KEEP_S = frozenset({"glass", "bus", "this", "is", "its", "has", "was", "yes", "lens", "plus"})


def singular(word: str) -> str:
    """``cubes`` -> ``cube``, ``boxes`` -> ``box``; other words unchanged."""
    if len(word) <= 2 or word in _KEEP_S or word.endswith("ss") or NUMBER.match(word):
        return word
    if word.endswith(("xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


def _fold(words: Sequence[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(words):
        for phrase, canonical in _PHRASES:
            if tuple(words[i:i + len(phrase)]) == phrase:
                out.extend(canonical)
                i += len(phrase)
                break
        else:
            out.append(words[i])
            i += 1
    return out


def normalise(text: str) -> list[str]:
    """The words of ``text`` that matter, in order: ``"Please lift the RED cubes!"`` ->
    ``["pick", "red", "cube"]``. Numbers stay as written (``0.1``)."""
    raw = [singular(w) for w in _TOKEN.findall(text.lower().replace("_", " "))]
    return [w for w in _fold(raw) if w not in _FILLERS]


def object_words(oid: str, *, label: str = "", colour: str | None = None,
                 shape: str | None = None, extra: Iterable[str] = ()) -> frozenset[str]:
    """The words that name an object: those of its id, label, colour and shape (a ``urdf``
    shape names nothing)."""
    parts = [oid, label, colour or "", "" if shape in (None, "urdf") else str(shape), *extra]
    return frozenset(w for part in parts for w in normalise(part))
