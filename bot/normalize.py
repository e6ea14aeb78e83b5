"""Text normalisation shared by the matcher and the crisis screen: small pure functions."""

from __future__ import annotations

import functools
import re
import unicodedata

APOSTROPHES = "\u2018\u2019\u201a\u201b\u02bc\u02b9\u0060\u00b4\u2032\uff07"
DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb\uff02"
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e"
_FOLD = str.maketrans(
    {
        **dict.fromkeys(APOSTROPHES, "'"),
        **dict.fromkeys(DOUBLE_QUOTES, '"'),
        **dict.fromkeys(ZERO_WIDTH, None),
        **dict.fromkeys("\n\r\t", " "),
    }
)

MAX_CHARS = 4096
"""Longer messages are cut before any work, so cost per message is bounded; Telegram's own limit, so a
message sent there is never cut before the crisis screen reads it."""

_REPEATS = re.compile(r"(.)\1{2,}")
_NON_WORD = re.compile(r"[^\w']+")
_SPACES = re.compile(r"\s+")

CONTRACTIONS: dict[str, str] = {
    "i'm": "i am",
    "im": "i am",
    "i've": "i have",
    "ive": "i have",
    "i'd": "i would",
    "i'll": "i will",
    "don't": "do not",
    "dont": "do not",
    "doesn't": "does not",
    "doesnt": "does not",
    "didn't": "did not",
    "didnt": "did not",
    "can't": "can not",
    "cant": "can not",
    "cannot": "can not",
    "won't": "will not",
    "wont": "will not",
    "isn't": "is not",
    "isnt": "is not",
    "wasn't": "was not",
    "wasnt": "was not",
    "aren't": "are not",
    "arent": "are not",
    "shouldn't": "should not",
    "shouldnt": "should not",
    "couldn't": "could not",
    "couldnt": "could not",
    "wouldn't": "would not",
    "wouldnt": "would not",
    "haven't": "have not",
    "havent": "have not",
    "hasn't": "has not",
    "hasnt": "has not",
    "hadn't": "had not",
    "hadnt": "had not",
    "weren't": "were not",
    "werent": "were not",
    "should've": "should have",
    "shouldve": "should have",
    "could've": "could have",
    "couldve": "could have",
    "would've": "would have",
    "wouldve": "would have",
    "you've": "you have",
    "youve": "you have",
    "we've": "we have",
    "it's": "it is",
    "its": "it is",
    "that's": "that is",
    "thats": "that is",
    "what's": "what is",
    "whats": "what is",
    "there's": "there is",
    "theres": "there is",
    "he's": "he is",
    "she's": "she is",
    "they're": "they are",
    "theyre": "they are",
    "you're": "you are",
    "youre": "you are",
    "we're": "we are",
    "let's": "let us",
    "he'll": "he will",
    "she'll": "she will",
    "they'll": "they will",
    "he'd": "he would",
    "she'd": "she would",
    "they'd": "they would",
    "they've": "they have",
    "hes": "he is",
    "shes": "she is",
    "y'all": "you all",
    "wanna": "want to",
    "gonna": "going to",
    "gotta": "got to",
    "kinda": "kind of",
    "sorta": "sort of",
}
"""Contractions and their spellings without an apostrophe, expanded to full words."""

SHORTHAND: dict[str, str] = {
    "u": "you",
    "ur": "your",
    "r": "are",
    "y": "why",
    "pls": "please",
    "plz": "please",
    "thx": "thanks",
    "thnx": "thanks",
    "tnx": "thanks",
    "ty": "thank you",
    "bc": "because",
    "cuz": "because",
    "coz": "because",
    "cos": "because",
    "idk": "i do not know",
    "rn": "right now",
    "tho": "though",
    "abt": "about",
    "b4": "before",
    "bday": "birthday",
    "msg": "message",
    "txt": "text",
    "convo": "conversation",
    "ppl": "people",
    "smth": "something",
    "sth": "something",
    "yrs": "years",
    "mths": "months",
    "wks": "weeks",
}
"""Chat shorthand expanded to the words moderators write in examples."""

MISSPELLINGS: dict[str, str] = {
    "becuase": "because",
    "becasue": "because",
    "beacuse": "because",
    "realy": "really",
    "relly": "really",
    "alot": "a lot",
    "wierd": "weird",
    "thier": "their",
    "recieve": "receive",
    "narcisist": "narcissist",
    "narcissit": "narcissist",
    "narsissist": "narcissist",
    "narcassist": "narcissist",
    "narcisistic": "narcissistic",
    "narcissitic": "narcissistic",
    "relationshp": "relationship",
    "realtionship": "relationship",
    "relashionship": "relationship",
    "trama": "trauma",
    "truama": "trauma",
    "traumma": "trauma",
    "therapyst": "therapist",
    "theraphy": "therapy",
    "threapy": "therapy",
    "therepy": "therapy",
    "definately": "definitely",
    "seperate": "separate",
    "seperated": "separated",
    "greif": "grief",
    "greiving": "grieving",
    "grieveing": "grieving",
    "stil": "still",
    "mis": "miss",
    "missin": "missing",
    "thnk": "think",
    "shuld": "should",
    "shoud": "should",
    "becaus": "because",
    "soo": "so",
    "hii": "hi",
    "heyy": "hey",
    "helo": "hello",
    "thanx": "thanks",
    "thankyou": "thank you",
    "byee": "bye",
    "okk": "ok",
    "nocontact": "no contact",
    "nc": "no contact",
    "traumabond": "trauma bond",
    "traumabonded": "trauma bonded",
    "traumabonding": "trauma bonding",
    "withdrawl": "withdrawal",
    "overeacting": "overreacting",
    "overeact": "overreact",
    "disonance": "dissonance",
    "dissonence": "dissonance",
    "reinforcment": "reinforcement",
    "intermitent": "intermittent",
    "chemestry": "chemistry",
    "chemisty": "chemistry",
    "beleiving": "believing",
    "beleive": "believe",
    "belive": "believe",
    "beter": "better",
    "shud": "should",
    "bak": "back",
    "councelor": "counselor",
    "councellor": "counsellor",
    "greive": "grieve",
    "comming": "coming",
    "coparent": "co parent",
    "coparenting": "co parenting",
    "coparents": "co parents",
    "embarassed": "embarrassed",
    "embarrased": "embarrassed",
    "dissapointed": "disappointed",
    "untill": "until",
    "okay": "ok",
}
"""Common misspellings seen in chat, folded to the spelling used in examples."""

PARTNER = "them"
"""The single token every pronoun and partner word is folded to."""

PARTNER_WORDS: tuple[str, ...] = (
    "husband",
    "hubby",
    "wife",
    "boyfriend",
    "girlfriend",
    "partner",
    "spouse",
    "abuser",
    "narcissist",
    "narc",
)
"""Words that name a partner even on their own ("husband", "the abuser").

One list for the matcher, which folds them to ``them``, and for the crisis screen, whose floor reads
them (with ``PARTNER_WORDS_AFTER_MY``) as ``<PARTNER_WORD>`` in "my ..." and "ex ...".
"""
PARTNER_WORDS_AFTER_MY: tuple[str, ...] = (
    "bf",
    "gf",
    "fiance",
    "fiancee",
    "fiancé",
    "fiancée",
    "significant other",
    "lover",
    "man",
    "woman",
)
"""Words that name a partner only after "my", "our" or "ex" ("my man", never "a man")."""

_ANY_PARTNER = "|".join((*PARTNER_WORDS, *PARTNER_WORDS_AFTER_MY))
_PARTNER_PHRASES = (
    rf"(?:my|our)\s+(?:ex[\s-]*)?(?:{_ANY_PARTNER})",
    r"(?:my|the)\s+(?:ex|abuser|narcissist|narc|x)",
    rf"ex[\s-]+(?:{_ANY_PARTNER})",
    rf"(?:{'|'.join(PARTNER_WORDS)}|ex)",
    r"(?:him|her|them|he|she|they|his|hers|their|theirs|himself|herself|themselves|themself)",
)
_PARTNER = re.compile(r"\b(?:" + "|".join(_PARTNER_PHRASES) + r")\b(?:'s)?")


def fold(text: str) -> str:
    """Fold Unicode forms, quotes, zero-width and control characters, and case; keep the words."""
    text = unicodedata.normalize("NFKC", text[:MAX_CHARS]).translate(_FOLD)
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() else " " for ch in text)
    return _SPACES.sub(" ", text).strip().casefold()


def words(text: str) -> list[str]:
    """Split folded text into words: letters, digits and in-word apostrophes."""
    return [word.strip("'") for word in _NON_WORD.split(text) if word.strip("'")]


def squeeze(word: str) -> str:
    """Collapse a letter repeated three or more times to two ("soooo" -> "soo")."""
    return _REPEATS.sub(r"\1\1", word)


@functools.lru_cache(maxsize=16384)
def _expand(word: str) -> str:
    word = squeeze(word)
    word = MISSPELLINGS.get(word, word)
    word = CONTRACTIONS.get(word, word)
    return SHORTHAND.get(word, word)


def for_matching(text: str) -> str:
    """Normalise a message or an example for fuzzy matching.

    Case, Unicode forms and quotes are folded; punctuation goes; contractions, shorthand and
    common misspellings are expanded; every pronoun and partner word becomes ``them`` so that
    "why do I miss my husband" and "why do i miss her" compare equal.
    """
    expanded = " ".join(_expand(word) for word in words(fold(text)))
    folded = _PARTNER.sub(PARTNER, expanded).replace("'", "")
    return _SPACES.sub(" ", folded).strip()
