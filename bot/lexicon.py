"""The crisis lexicon: categories, the rule type, where the floor's rules live, and the screen's word lists.

The floor's rules and macros are data, in ``bot/floor/floor.yml`` (compiled by ``bot.rules``); every
pattern runs over the text as ``bot.screen.screen_text`` leaves it: lowercase, Unicode, look-alike
letters and leetspeak folded, contractions expanded ("I'm" is "i am", "don't" is "do not"), no
apostrophes, one space between words, and `` | `` where a clause ended. Content files can add rules,
never remove these.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.bounded import Pattern
from bot.models import Level, Problem, Track
from bot.normalize import PARTNER_WORDS, PARTNER_WORDS_AFTER_MY
from bot.yamlfile import read_yaml

# Categories: what a detection is about. Operators see these in the escalation log.
SUICIDAL = "suicidal"
"""Explicit suicidal thoughts or intent, including slang ("kms", "unalive", "sewerslide")."""
PASSIVE = "passive"
"""A wish to be dead or not to wake up."""
METHOD = "method"
"""Method, means, plan or timing."""
ATTEMPT = "attempt"
"""An attempt in progress or just made."""
SELF_HARM = "self_harm"
"""Self-harm without stated suicidal intent."""
FAREWELL = "farewell"
"""Goodbyes and final arrangements."""
HOPELESSNESS = "hopelessness"
"""Hopelessness, feeling trapped, being a burden."""
PARTNER_DANGER = "partner_danger"
"""Danger from a partner, ex or someone at home: threats, violence, strangulation, stalking."""
PARTNER_SUICIDE_THREAT = "partner_suicide_threat"
"""A partner threatening suicide to keep the person from leaving."""
THIRD_PARTY = "third_party"
"""Someone else is at risk: the person is worried about a friend or relative."""
HARM_OTHERS = "harm_others"
"""The person says they may hurt someone else."""

CATEGORIES: tuple[str, ...] = (
    SUICIDAL,
    PASSIVE,
    METHOD,
    ATTEMPT,
    SELF_HARM,
    FAREWELL,
    HOPELESSNESS,
    PARTNER_DANGER,
    PARTNER_SUICIDE_THREAT,
    THIRD_PARTY,
    HARM_OTHERS,
)
"""Every category a rule may name, in the order rules are listed."""

TRACKS: dict[str, Track] = {
    **dict.fromkeys(CATEGORIES, Track.SELF),
    PARTNER_DANGER: Track.OTHERS,
    PARTNER_SUICIDE_THREAT: Track.OTHERS,
    HARM_OTHERS: Track.OTHERS,
}
"""Which reply track each category leads to."""


@dataclass(frozen=True)
class Rule:
    """One lexicon pattern and what it means when it fires."""

    id: str
    category: str
    level: Level
    pattern: Pattern
    """Compiled by ``bot.bounded``: searched with a time bound (``bounded.search``)."""
    track: Track = Track.SELF
    window_level: Level | None = None
    """The level this rule reaches when the person is already in a crisis state (never lower than ``level``)."""
    language: str | None = None
    """The language the rule reads when it is not English ("es"): the crisis reply adds that language's line."""


FLOOR_FILE = Path(__file__).parent / "floor" / "floor.yml"
"""The floor's rules and macros: packaged with the code, so they load when no content folder does."""

BUILT_IN_MACROS: dict[str, str] = {
    "PARTNER_WORD": "(?:"
    + "|".join(word for word in (*PARTNER_WORDS, *PARTNER_WORDS_AFTER_MY) if word.isascii())
    + ")",
}
"""Macros that come from lists the matcher shares (``bot/normalize.py``), so that each list is kept once.

Words with accents are left out: the screen has taken accents off before any pattern runs.
"""


TYPOS: dict[str, str] = {
    "kil": "kill",
    "kll": "kill",
    "kiil": "kill",
    "kilk": "kill",
    "klil": "kill",
    "kilme": "kill me",
    "killme": "kill me",
    "killmyself": "kill myself",
    "mysef": "myself",
    "myslef": "myself",
    "mysel": "myself",
    "myseld": "myself",
    "myselft": "myself",
    "meself": "myself",
    "slef": "self",
    "sefl": "self",
    "wnat": "want",
    "wamt": "want",
    "wan": "want",
    "wana": "want to",
    "wnt": "want",
    "diee": "die",
    "ded": "dead",
    "deaad": "dead",
    "lief": "life",
    "lfie": "life",
    "sucide": "suicide",
    "suicde": "suicide",
    "suiside": "suicide",
    "suacide": "suicide",
    "sucidal": "suicidal",
    "suisidal": "suicidal",
    "sooicide": "suicide",
    "selfharm": "self harm",
    "selfharming": "self harming",
    "selfharmed": "self harmed",
    "strangeled": "strangled",
    "stranggled": "strangled",
    "stangled": "strangled",
    "strangeld": "strangled",
    "chocked": "choked",
    "choaked": "choked",
    "chokd": "choked",
    "od'd": "overdosed",
    "odd'd": "overdosed",
    "od'ed": "overdosed",
    "oded": "overdosed",
    "odded": "overdosed",
    "oding": "overdosing",
    "od-ing": "overdosing",
    "overdossed": "overdosed",
    "pils": "pills",
    "piils": "pills",
    "unalvie": "unalive",
    "sewerslid": "sewerslide",
    "sewersiide": "sewerslide",
    "goodby": "goodbye",
    "gbye": "goodbye",
    "g'bye": "goodbye",
    "nomore": "no more",
    "any1": "anyone",
    "no1": "no one",
    "noone": "no one",
    "some1": "someone",
    "every1": "everyone",
    "everyones": "everyone is",
    "every1s": "everyone is",
    "theyll": "they will",
    "ima": "i am going to",
    "imma": "i am going to",
    "i'ma": "i am going to",
    "tryna": "trying to",
    "finna": "going to",
    "bout": "about",
    "gon": "going to",
    "hafta": "have to",
    "2nite": "tonight",
    "tonite": "tonight",
    "2night": "tonight",
    "2day": "today",
    "2morrow": "tomorrow",
    "idc": "i do not care",
    "idgaf": "i do not care",
    "nvm": "never mind",
    "yall": "you all",
}
"""Misspellings, shorthand and slang forms the screen rewrites before matching (after contractions)."""

CONTRACTIONS_EXTRA: dict[str, str] = {
    "you'll": "you will",
    "we'll": "we will",
    "it'll": "it will",
    "you'd": "you would",
    "we'd": "we would",
    "it'd": "it would",
    "who's": "who is",
    "where's": "where is",
    "here's": "here is",
    "everyone's": "everyone is",
    "everybody's": "everybody is",
    "nobody's": "nobody is",
    "no one's": "no one is",
    "i'd've": "i would have",
    "might've": "might have",
    "must've": "must have",
    "mustn't": "must not",
    "needn't": "need not",
    "ain't": "is not",
    "aint": "is not",
    "y'know": "you know",
    "c'mon": "come on",
    "'cause": "because",
    "'til": "until",
    "til": "until",
    "till": "until",
    "outta": "out of",
    "lemme": "let me",
    "gimme": "give me",
}
"""Contractions the matcher's table (``normalize.CONTRACTIONS``) lacks; the screen reads both, so none is in both."""

FUZZY_WORDS: tuple[str, ...] = (
    "suicide",
    "suicidal",
    "myself",
    "overdosed",
    "overdosing",
    "unalive",
    "sewerslide",
    "goodbye",
    "hopeless",
    "disappear",
)
"""Lexicon words a token of five letters or more is corrected to when one edit away (and same first letter).

Kept small on purpose: each word here was checked against common English words one edit away
("overdose" is not here because of "overdone", "strangled" because of "wrangled", "choked" because
of "cooked"); their misspellings are listed in ``TYPOS`` instead.
"""

JOIN_WORDS: frozenset[str] = frozenset(
    {"myself", "suicide", "suicidal", "unalive", "sewerslide", "overdose", "overdosed", "goodbye", "kill", "die"}
)
"""Words split by a space ("my self", "sui cide", "good bye") that the screen joins back together."""

NOT_AFTER_MY_SELF: frozenset[str] = frozenset(
    {"esteem", "worth", "confidence", "respect", "image", "care", "love", "doubt", "control", "awareness", "help"}
)
"""Words after "my self" that mean it is not "myself" ("he killed my self esteem")."""

SEGMENT_WORDS: frozenset[str] = frozenset(
    "i me my myself want wanna to die dead kill end it all life am so just kms hang cut hurt suicide suicidal wish"
    " was be here anymore not do going gonna unalive self harm take pills tonight now".split()
)
"""Words a run of spaced-out letters ("k i l l m y s e l f") may be split back into."""

EMOJI: dict[str, str] = {
    "\U0001f48a": " pills ",  # pill
    "\U0001f52a": " knife ",  # kitchen knife
    "\U0001f5e1": " knife ",  # dagger
    "\U0001faa2": " rope ",  # knot
    "\U0001f52b": " gun ",  # pistol
    "\U0001fa78": " blood ",  # drop of blood
    "\U0001faa6": " grave ",  # headstone
    "\u26b0": " coffin ",  # coffin
}
"""Emoji that name a method; they become words so rules see them (the pill emoji is a strong risk signal)."""

CONFUSABLES = str.maketrans(
    {
        "а": "a",
        "е": "e",
        "о": "o",
        "р": "p",
        "с": "c",
        "у": "y",
        "х": "x",
        "і": "i",
        "ѕ": "s",
        "ј": "j",
        "к": "k",
        "м": "m",
        "т": "t",
        "ԁ": "d",
        "ӏ": "l",
        "ο": "o",
        "α": "a",
        "ε": "e",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "υ": "u",
        "ѵ": "v",
        "ı": "i",
        "ȷ": "j",
        "ł": "l",
        "ø": "o",
        "đ": "d",
    }
)
"""Cyrillic, Greek and other letters that look Latin and carry no separable accent, folded so "kіll" (with a
Cyrillic і) and "kıll" (dotless ı) read "kill"; accents ("kíll") are taken off before these apply."""

FILLERS = str.maketrans(dict.fromkeys("\u3164\u115f\u1160\uffa0\u2800\u17b4\u17b5", " "))
"""Characters that show nothing but are letters to Unicode, used as spaces: the Hangul fillers, the
Braille blank, the Khmer inherent vowels. Each becomes a space, so "kill\u3164myself" reads "kill myself"."""

VIOLENCE = re.compile(
    r"\b(?:hit|hits|hitting|beat|beaten|beating|punch\w*|chok\w*|strangl\w*|kill\w*|murder\w*|suicid\w*"
    r"|self[- ]harm\w*|rape\w*|raping|assault\w*|weapon\w*|gun|guns|knife|knives|stab\w*|blood\w*|violen\w*"
    r"|bruis\w*|slap\w*|kick\w*|shov\w*)\b",
    re.IGNORECASE,
)
"""Words that mark a passage as describing violence; such passages are not quoted in crisis turns."""


@functools.cache
def floor_data() -> tuple[Any, tuple[Problem, ...]]:
    """The floor file as YAML data (``None`` if it cannot be read) and the problems met reading it; read once."""
    data, problems = read_yaml(FLOOR_FILE)
    return data, tuple(problems)


@functools.cache
def vocabulary() -> frozenset[str]:
    """Every literal word of three letters or more in the floor's lines and macros, and the word lists below.

    The repeated-letter fold reads a token as one of these ("diiie" -> "die"). It is read from the
    floor file as written, so that it needs nothing compiled.
    """
    found: set[str] = set(FUZZY_WORDS) | JOIN_WORDS | SEGMENT_WORDS
    found.update(
        re.findall(r"[a-z]{3,}", " ".join(word for word in (*PARTNER_WORDS, *PARTNER_WORDS_AFTER_MY) if word.isascii()))
    )
    data, _ = floor_data()
    if not isinstance(data, dict):
        return frozenset(found)
    sources = [*(data.get("macros") or {}).values()]
    for rule in data.get("rules") or ():
        if isinstance(rule, dict):
            sources += [rule.get("alternatives"), rule.get("pattern")]
    for source in sources:
        for text in source if isinstance(source, list) else [source]:
            if isinstance(text, str):
                found.update(re.findall(r"[a-z]{3,}", text))
    return frozenset(found)
