"""An instruction in words as a :class:`Frame`: what to do (the verbs' class: pick or
transport), the objects it is about in their roles (the theme; a destination with its
preposition), an offset (numbers with units and directions), and modifiers (keep holding, by
the learned policy, once). No model: a small lexicon of verbs, prepositions, directions and
units, and the words of the objects of the library's scenes.

Object references are :class:`Mention` s: by name ("the LEGO"), colour and shape ("the red
cube", "the yellow brick"), colour alone ("the red one", "stack red on green"), a group or a
plural ("the red cubes", "every red block", "the reds"), or a pronoun ("it", "them": the
object said before). A task's templates are parsed the same way, with each ``{param}`` a
slot, so a task's meaning comes from how it is asked for, not from its name.

Directions of an offset are the robot's: x away from its base (forward), y to its left.

Clearing a surface ("clear the table", "tidy up the desk into the tray") names no object: its
theme is everything on the surface (every object of the scene that is not a container), and
the destination may go unsaid (the task's own, its parameter's default).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from harness_bt.planner.words import NUMBER, singular

__all__ = ["Frame", "Mention", "Vocabulary", "parse"]

_TOKEN = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}|-?(?:\d+(?:\.\d*)?|\.\d+)|[a-z]+(?:'[a-z]+)?")

#: verbs that take an object somewhere (a destination or an offset)
TRANSPORT = frozenset({
    "put", "place", "set", "drop", "move", "stack", "pile", "sort", "tidy", "clear",
    "gather", "collect", "store", "pop", "stick", "lay", "deposit", "bring", "carry",
    "transfer", "shift", "slide", "nudge", "push", "offset", "displace", "relocate",
    "stow", "load", "insert", "goes", "position", "rest", "stand", "shove", "empty", "clean",
    "declutter",
})
#: verbs that clear a surface ("clear the table"), and the surfaces they clear
_CLEARING = frozenset({"clear", "tidy", "empty", "clean", "declutter"})
_SURFACES = frozenset({"table", "desk", "surface", "workspace", "tabletop", "worktop"})
#: words that say in which order, not which object ("nearest cube first")
_ORDERING = frozenset({"nearest", "closest", "furthest", "farthest"})
#: words that mean every object there is (that is not a container)
_EVERYTHING = frozenset({"everything", "anything"})
#: verbs that take an object up
PICK = frozenset({
    "pick", "lift", "grab", "grasp", "take", "raise", "fetch", "get", "snatch", "seize",
    "retrieve", "hold", "keep", "try",
})
_FORMS = {"picked": "pick", "picking": "pick", "lifted": "lift", "grabbed": "grab",
          "placed": "place", "putting": "put", "moved": "move", "stacked": "stack",
          "holding": "hold", "held": "hold", "taken": "take", "took": "take",
          "dropped": "drop", "sorted": "sort", "shifted": "shift", "slid": "slide",
          "pushed": "push", "kept": "keep", "moving": "move", "placing": "place",
          "lifting": "lift", "grabbing": "grab", "stacking": "stack"}
_PREPOSITIONS = {"in": "in", "into": "in", "inside": "in", "within": "in",
                 "on": "on", "onto": "on", "upon": "on", "atop": "on", "over": "on",
                 "to": "to"}
_DETERMINERS = frozenset(["the", "a", "an", "that", "this", "those", "these", "my", "your"])
_QUANTIFIERS = frozenset(["every", "all", "each", "both"])
_PRONOUNS = {"it": False, "them": True, "they": True}
#: nouns any object answers to, and nouns that name a kind of object
GENERIC = frozenset(["object", "thing", "item", "piece"])
_NOUNS = {"block": "cube", "box": "cube", "bin": "container", "receptacle": "container",
          "basket": "container"}
_UNITS = {"m": 1.0, "metre": 1.0, "meter": 1.0, "cm": 0.01, "centimetre": 0.01,
          "centimeter": 0.01, "mm": 0.001, "millimetre": 0.001, "millimeter": 0.001}
_DIRECTIONS = {"left": (0.0, 1.0), "right": (0.0, -1.0), "forward": (1.0, 0.0),
               "forwards": (1.0, 0.0), "ahead": (1.0, 0.0), "away": (1.0, 0.0),
               "back": (-1.0, 0.0), "backward": (-1.0, 0.0), "backwards": (-1.0, 0.0),
               "closer": (-1.0, 0.0), "nearer": (-1.0, 0.0)}
_TOWARDS = frozenset({"toward", "towards"})
_NEGATIONS = frozenset({"not", "dont", "don't", "never", "nor"})
_ROBOT = frozenset({"robot", "me", "base", "arm"})
#: modifiers: words (or word pairs) that ask for a way of doing it
_MODIFIERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "hold": (("hold",), ("holding",), ("held",), ("keep",), ("hang", "on"), ("gripper",),
             ("dont", "let", "go"), ("don't", "let", "go"), ("without", "letting", "go")),
    "policy": (("policy",), ("learned",), ("learnt",), ("neural",)),
    "alone": (("alone",), ("once",), ("single",), ("one", "shot"), ("one", "attempt"),
              ("one", "try"), ("no", "retry"), ("no", "retries"), ("no", "recovery"),
              ("no", "recoveries"), ("by", "itself"), ("on", "its", "own"),
              ("policy", "only"), ("without", "retrying")),
}


@dataclass(frozen=True)
class Vocabulary:
    """The words that can name an object: colours, and the other words of the objects of the
    scenes a planner chooses among (ids, labels, shapes, groups)."""

    colours: frozenset[str]
    nouns: frozenset[str]

    @classmethod
    def of(cls, colours: Iterable[str], nouns: Iterable[str]) -> Vocabulary:
        return cls(frozenset(colours) | {"gray"},
                   frozenset(nouns) | GENERIC | set(_NOUNS) | {"container", "one", "ones"})


@dataclass(frozen=True)
class Mention:
    """One reference to objects: its colour and other words, whether it means several
    (a plural, a quantifier, a group), a pronoun it is, or the template slot it is; the
    preposition before it."""

    text: str
    colour: str | None = None
    nouns: tuple[str, ...] = ()
    plural: bool = False
    pronoun: str | None = None
    slot: str | None = None
    prep: str | None = None
    at: int = 0
    #: everything on a surface ("clear the table"): every object that is not a container
    surface: bool = False

    def describe(self) -> str:
        return self.text


@dataclass(frozen=True)
class Frame:
    """What an instruction (or a template) asks: the verbs' class (``pick``, ``transport``
    or ``None``), the theme and the destination (with its preposition), an offset (metres,
    ``[dx, dy]``) or the slot that takes one, modifiers, and what could not be understood."""

    verb: str | None
    theme: Mention | None
    destination: Mention | None
    offset: tuple[float, ...] | None = None
    offset_slot: str | None = None
    modifiers: frozenset[str] = frozenset()
    problems: tuple[str, ...] = ()
    extra: tuple[Mention, ...] = field(default=())
    #: it clears a surface: it takes things somewhere even when it does not say where
    clears: bool = False

    @property
    def moves(self) -> bool:
        """Whether it takes the object somewhere (a destination or an offset)."""
        return self.destination is not None or self.offset is not None or \
            self.offset_slot is not None or self.clears

    def to_dict(self) -> dict[str, object]:
        def m(x: Mention | None) -> object:
            return None if x is None else {"text": x.text, "slot": x.slot, "prep": x.prep,
                                           "plural": x.plural}
        return {"verb": self.verb, "theme": m(self.theme), "destination": m(self.destination),
                "offset": None if self.offset is None else list(self.offset),
                "offset_slot": self.offset_slot, "modifiers": sorted(self.modifiers),
                "problems": list(self.problems), "clears": self.clears}


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.replace("_", " ").replace("’", "'").lower()
                          if "{" not in text else _lower_outside_slots(text))


def _lower_outside_slots(text: str) -> str:
    parts = re.split(r"(\{[A-Za-z_][A-Za-z0-9_]*\})", text)
    return "".join(p if p.startswith("{") else p.replace("_", " ").lower() for p in parts)


def _modifiers(tokens: list[str]) -> frozenset[str]:
    found = set()
    for name, phrases in _MODIFIERS.items():
        for phrase in phrases:
            n = len(phrase)
            if any(tuple(tokens[i:i + n]) == phrase for i in range(len(tokens) - n + 1)):
                found.add(name)
    return frozenset(found)


def _offset(tokens: list[str]) -> tuple[tuple[float, ...] | None, str | None]:
    """The offset the numbers, units and directions say (``[dx, dy]`` metres), or a problem."""
    numbers = [i for i, t in enumerate(tokens) if NUMBER.match(t)]
    if not numbers:
        return None, None
    directions: list[tuple[int, tuple[float, float]]] = []
    for i, t in enumerate(tokens):
        if t in _DIRECTIONS:
            directions.append((i, _DIRECTIONS[t]))
        elif t in _TOWARDS and any(w in _ROBOT for w in tokens[i + 1:i + 3]):
            directions.append((i, (-1.0, 0.0)))
    values = []
    for i in numbers:
        unit = _UNITS.get(singular(tokens[i + 1])) if i + 1 < len(tokens) else None
        values.append(float(tokens[i]) * (unit if unit is not None else 1.0))
    if not directions:
        if 2 <= len(values) <= 3:
            return tuple(round(v, 6) for v in values), None
        return None, (f"{len(values)} number(s) ({', '.join(tokens[i] for i in numbers)}) "
                      "but no direction: say which way (left, right, forward, back) or give "
                      "[dx, dy]")
    free = list(directions)
    chosen: dict[int, tuple[float, float]] = {}
    for k, i in enumerate(numbers):  # the direction said after the number first
        end = numbers[k + 1] if k + 1 < len(numbers) else len(tokens)
        after = [d for d in free if i < d[0] < end]
        if after:
            chosen[k] = after[0][1]
            free.remove(after[0])
    for k, i in enumerate(numbers):  # else the one said before it
        if k in chosen:
            continue
        start = numbers[k - 1] if k else -1
        before = [d for d in free if start < d[0] < i]
        if not before:
            return None, f"no direction for {tokens[i]}: say which way it goes"
        chosen[k] = before[-1][1]
        free.remove(before[-1])
    dx = sum(v * chosen[k][0] for k, v in enumerate(values))
    dy = sum(v * chosen[k][1] for k, v in enumerate(values))
    return (round(dx, 6) + 0.0, round(dy, 6) + 0.0), None


def parse(text: str, vocabulary: Vocabulary) -> Frame:
    """The frame of an instruction or of a template (``{param}`` slots; see the module
    docstring)."""
    raw = _tokens(text)
    tokens = [_FORMS.get(t, t) for t in raw]
    modifiers = _modifiers(tokens)
    verbs = {t for t in tokens if t in TRANSPORT or t in PICK}
    verb = "transport" if verbs & TRANSPORT else "pick" if verbs else None
    mentions: list[Mention] = []
    problems: list[str] = []
    prep: str | None = None
    plural = False
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.startswith("{"):
            mentions.append(Mention(raw[i], slot=t[1:-1], prep=prep, at=i))
            prep, plural = None, False
        elif t in _PREPOSITIONS:
            prep = _PREPOSITIONS[t]
        elif t in _QUANTIFIERS:
            plural = True
        elif t in _PRONOUNS:
            mentions.append(Mention(t, pronoun=t, plural=_PRONOUNS[t], prep=prep, at=i))
            prep, plural = None, False
        elif t in _EVERYTHING:
            mentions.append(Mention(raw[i], plural=True, prep=prep, at=i, surface=True))
            prep, plural = None, False
        elif _object_word(t, tokens, i, vocabulary):
            j = i
            words: list[str] = []
            while j < len(tokens) and _object_word(tokens[j], tokens, j, vocabulary):
                words.append(tokens[j])
                j += 1
            if i == 0 or tokens[i - 1] not in _ORDERING:  # "nearest cube first": an order
                mentions.append(_mention(words, raw[i:j], plural, prep, i, vocabulary))
            prep, plural = None, False
            i = j
            continue
        elif t in verbs:  # a new clause: a preposition before the verb is not the object's
            prep = None
        i += 1
    mentions = _resolve_pronouns(mentions, problems)
    offset, trouble = _offset(tokens)
    slot = next((m for m in mentions if m.slot and m.prep is None and _after_by(tokens, m)),
                None)
    theme = next((m for m in mentions if m.prep is None and m is not slot), None)
    dest = next((m for m in mentions if m.prep is not None and m is not theme), None)
    roles = [m for m in (theme, dest, slot) if m is not None]
    surface = next((i for i, t in enumerate(tokens) if singular(t) in _SURFACES), None)
    clears = surface is not None and bool(verbs & _CLEARING) and "{" not in text
    if clears and theme is None and surface is not None:  # "clear the table (into the tray)"
        theme = Mention(raw[surface], plural=True, at=surface, surface=True)
    if theme is None and dest is not None and len([m for m in mentions if m is not slot]) == 1:
        theme, dest = replace(dest, prep=None), None  # "run the policy on the red cube"
    extra = tuple(m for m in mentions if not any(m is r for r in roles))
    if trouble and offset is None and slot is None:
        problems.append(trouble)
    if extra and "{" not in text:
        problems.append(f"it names more objects ({', '.join(m.text for m in mentions)}) than "
                        "a task takes: ask for one task at a time, one object in each role")
    negated = [t for t in tokens if t in _NEGATIONS]
    if negated and not ({"dont", "don't"} & set(negated) and "hold" in modifiers
                        and len(negated) == 1):
        problems.append(f"a negation ({negated[0]!r}): say what to do, not what not to do")
    if offset is None and trouble is None and dest is None and \
            any(t in _DIRECTIONS for t in tokens):
        problems.append("a direction but no distance: say how far (e.g. 10 cm to the left)")
    return Frame(verb, theme, dest, offset, slot.slot if slot else None, modifiers,
                 tuple(problems), extra, clears)


def _after_by(tokens: list[str], m: Mention) -> bool:
    """A template's offset slot: ``by {offset}`` or ``{target} {offset} m``."""
    return m.at > 0 and (tokens[m.at - 1] == "by" or tokens[m.at - 1].startswith("{"))


def _object_word(t: str, tokens: list[str], i: int, vocabulary: Vocabulary) -> bool:
    if t in ("one", "ones"):  # "the red one", never "one attempt"
        return i > 0 and _colour(tokens[i - 1], vocabulary) is not None
    word = singular(t)
    return _colour(t, vocabulary) is not None or word in vocabulary.nouns or \
        t in vocabulary.nouns


def _colour(t: str, vocabulary: Vocabulary) -> str | None:
    word = singular(t)
    if word in vocabulary.colours:
        return "grey" if word == "gray" else word
    return None


def _mention(words: list[str], raw: list[str], plural: bool, prep: str | None, at: int,
             vocabulary: Vocabulary) -> Mention:
    colour = None
    nouns = []
    many = plural
    for t in words:
        c = _colour(t, vocabulary)
        if c is not None and colour is None:
            colour = c
            many = many or t != singular(t)
            continue
        word = singular(t)
        many = many or (word != t and t not in vocabulary.nouns) or t == "ones"
        if word in ("one", "ones"):
            continue
        nouns.append(_NOUNS.get(word, word))
    return Mention(" ".join(raw), colour, tuple(nouns), many, prep=prep, at=at)


def _resolve_pronouns(mentions: list[Mention], problems: list[str]) -> list[Mention]:
    """A pronoun is the object said before it: dropped when it is the theme again ("pick
    up the cube and put it in the tray"), else that object in its own role."""
    out: list[Mention] = []
    for m in mentions:
        if m.pronoun is None:
            out.append(m)
            continue
        before = [x for x in out if x.pronoun is None]
        if not before:
            problems.append(f"{m.pronoun!r} refers to nothing said before it: name the object")
            continue
        if before[0] is before[-1] or m.prep is None or m.prep not in ("in", "on", "to"):
            continue  # the theme again
        out.append(replace(before[-1], prep=m.prep, at=m.at))
    return out
