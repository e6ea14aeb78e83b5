"""The core vocabulary shared by the engine and its adapters; no platform types here."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path


@dataclass(frozen=True)
class Incoming:
    """One message from a person, as any adapter hands it to the engine."""

    user_id: str
    """The platform's id for the person; the engine stores only a keyed hash of it."""
    text: str
    """What the person wrote, or the label of the button they tapped."""
    channel: str
    """Which adapter it came from, e.g. ``terminal`` or ``telegram``."""
    topic: str | None = None
    """An intent id chosen from a suggestion button, instead of matching the text."""


@dataclass(frozen=True)
class Suggestion:
    """A topic offered as a follow-up (a button on Telegram, a number in the terminal)."""

    intent: str
    label: str


class ReplyKind(StrEnum):
    """What kind of reply a message is, so adapters can style and order it."""

    ANSWER = "answer"
    """A passage from the article or a conversational line."""
    FALLBACK = "fallback"
    """The bot did not understand and says so."""
    CRISIS = "crisis"
    """Crisis resources; always sent first and never delayed."""
    CHECK_IN = "check_in"
    """A gentle check-in after an ambiguous message; sent before the answer, without alarm."""
    NOTICE = "notice"
    """A line about the bot itself, e.g. that content is unavailable."""


@dataclass(frozen=True)
class Reply:
    """One message the bot sends back."""

    text: str
    kind: ReplyKind = ReplyKind.ANSWER
    suggestions: tuple[Suggestion, ...] = ()
    source: str | None = None
    """Where a quoted passage comes from, shown once under it."""


class Level(StrEnum):
    """How serious a crisis detection is, in rising order."""

    CONCERN = "concern"
    CRISIS = "crisis"
    IMMINENT = "imminent"

    @property
    def rank(self) -> int:
        """Position in the order concern < crisis < imminent."""
        return list(Level).index(self)


class Track(StrEnum):
    """Which kind of help a crisis reply leads with."""

    SELF = "self"
    """Suicide or self-harm: 988 first."""
    OTHERS = "others"
    """Danger from a partner or someone else: 911 and the domestic violence hotline."""


@dataclass(frozen=True)
class Detection:
    """The crisis screen's verdict on one message."""

    level: Level
    category: str
    rule: str
    """The id of the lexicon rule that fired, never the text that fired it."""
    track: Track = Track.SELF
    window_level: Level | None = None
    """The level the rule reaches when the person is already in a crisis state (see ``safety.in_crisis_window``)."""
    language: str | None = None
    """Set when a rule that fired reads a language other than English ("es"), whichever rule won."""


@dataclass(frozen=True)
class Escalation:
    """One crisis or imminent detection as operators see it: no message text, no raw id."""

    id: str
    at: float
    """When it happened, in seconds since the epoch (UTC)."""
    user_key: str
    """The keyed hash of the person, the same one their session is stored under."""
    level: Level
    category: str
    rule: str
    channel: str
    resources: tuple[str, ...]
    """Ids of the resources the reply showed, e.g. ``lifeline`` or ``dv_hotline``."""
    excerpt: str | None = None
    """A redacted excerpt, only when an operator opted in; ``None`` by default."""
    acked_by: str | None = None
    acked_at: float | None = None
    alerted_at: float | None = None
    """When an operator alert was delivered; ``None`` while it is still owed."""


@dataclass(frozen=True)
class Candidate:
    """One intent the matcher considered, with the example that scored best."""

    intent: str
    score: float
    example: str
    fuzzy: float | None = None
    """With meaning-based matching on: what the fuzzy scorers gave (``score`` is the fused score)."""
    meaning: float | None = None
    """With meaning-based matching on: the meaning score, from the cosine similarity to ``nearest``."""
    nearest: str | None = None
    """With meaning-based matching on: the example nearest in meaning."""


@dataclass(frozen=True)
class Match:
    """The matcher's answer: an intent, or no intent and the reason why."""

    intent: str | None
    score: float
    runner_up: str | None = None
    runner_up_score: float = 0.0
    reason: str = "matched"
    """``matched``, ``chosen`` (a button), ``low_confidence``, ``ambiguous`` or ``empty``."""
    candidates: tuple[Candidate, ...] = ()
    """The best few intents, best first, for explaining a decision."""
    also: str | None = None
    """Another intent a sentence of the message asked about clearly, offered as a button beside the answer."""


@dataclass
class Session:
    """What the bot remembers about one person between messages."""

    user_key: str
    """Keyed hash of the channel and platform user id."""
    first_seen: float
    last_seen: float
    turns: int = 0
    last_intent: str | None = None
    shown: set[str] = field(default_factory=set)
    """Passage ids already shown, so a repeated question gets the next passage."""
    crisis_level: Level | None = None
    crisis_at: float | None = None
    """When the crisis state was last entered or refreshed."""
    crisis_track: Track | None = None
    """Which help the crisis state keeps in view (``None`` when there is no crisis state)."""


@dataclass(frozen=True)
class Example:
    """One way a person might phrase an intent, with the line it is written on."""

    text: str
    line: int


@dataclass(frozen=True)
class Intent:
    """Something a person may ask about, and the passages that answer it."""

    id: str
    examples: tuple[Example, ...]
    responses: tuple[str, ...]
    """Passage ids, in the order a person sees them when they ask again."""
    keywords: tuple[str, ...] = ()
    title: str | None = None
    """A short label for buttons and suggestions, e.g. "Why do I miss them?"."""
    menu: int | None = None
    """The intent's position among the topics a person can pick (1 = first), or ``None`` if not listed."""
    action: str = "answer"
    """``answer`` shows the next passage; ``continue`` goes on with the last topic."""
    path: Path = Path()
    line: int = 1


@dataclass(frozen=True)
class Passage:
    """A curated reply: a quotation from the article, or one of the bot's own lines."""

    id: str
    text: str
    section: str | None = None
    """The article heading the quotation comes from; ``None`` for the bot's own lines."""
    follow_ups: tuple[str, ...] = ()
    """Intent ids to suggest next."""
    path: Path = Path()
    line: int = 1

    @property
    def quoted(self) -> bool:
        """Whether the text is quoted from the article (and must be verbatim)."""
        return self.section is not None


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a content file, printed as ``path:line: level: message``."""

    path: Path
    line: int
    level: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.level}: {self.message}"
