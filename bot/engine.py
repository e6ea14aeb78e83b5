"""The platform-neutral core: crisis screen first, then intent, passage, session and replies."""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from bot import safety
from bot.content import Catalog
from bot.escalation import Escalator
from bot.matcher import Matcher, MatcherSettings
from bot.models import (
    Detection,
    Escalation,
    Incoming,
    Intent,
    Level,
    Match,
    Passage,
    Reply,
    ReplyKind,
    Session,
    Suggestion,
)
from bot.sessions import Sessions
from bot.store import Store

log = logging.getLogger("unhooked.engine")

MAX_SUGGESTIONS = 3
CRISIS_READ_TIMEOUT = 0.25
"""Seconds a crisis turn waits for the person's session before going on without it."""

NOT_UNDERSTOOD = "I'm not sure I understood that. Could you say it another way? Or pick one of these topics:"
UNSURE_BETWEEN = "I'm not sure which of these you mean. Could you pick one, or say a little more?"
WHICH_TOPIC = "Happy to go on. Which topic would you like to hear more about?"
APOLOGY = "Sorry, something went wrong on my side. Could you try saying that again?"
NO_CONTENT = "I can't reach my reading material right now, so I can't answer that. Please try again a little later."


@dataclass(frozen=True)
class Outcome:
    """What the engine made of one message: the replies and how it decided."""

    replies: tuple[Reply, ...]
    match: Match | None = None
    detection: Detection | None = None
    escalation: Escalation | None = None
    """The record made for operators, already stored (database or spool) when ``handle`` returns."""


class Engine:
    """Turns an ``Incoming`` message into replies; adapters only translate."""

    def __init__(
        self,
        store: Store,
        secret: bytes,
        catalog: Catalog | None = None,
        *,
        matcher_settings: MatcherSettings | None = None,
        clock: Callable[[], float] = time.time,
        escalator: Escalator | None = None,
    ) -> None:
        self.sessions = Sessions(store)
        self.escalator = escalator or Escalator(store, clock=clock)
        self._secret = secret
        self._clock = clock
        self._matcher_settings = matcher_settings
        self.catalog: Catalog | None = None
        self.matcher: Matcher | None = None
        self.use(catalog)

    def use(self, catalog: Catalog | None) -> None:
        """Serve ``catalog`` from the next message on (``None`` serves crisis replies only)."""
        matcher = Matcher(catalog.phrases(), self._matcher_settings) if catalog else None
        self.catalog, self.matcher = catalog, matcher

    def user_key(self, channel: str, user_id: str) -> str:
        """The keyed hash that stands for a person everywhere the bot stores or logs anything."""
        digest = hmac.new(self._secret, f"{channel}:{user_id}".encode(errors="surrogatepass"), hashlib.sha256)
        return digest.hexdigest()[:32]

    async def handle(self, incoming: Incoming) -> Outcome:
        """Answer one message. Never raises for anything a person can type."""
        detection = self._screen(incoming.text)
        key = self.user_key(incoming.channel, incoming.user_id)
        now = self._clock()
        self.sessions.count("messages", now)
        if detection is not None and detection.level.rank >= Level.CRISIS.rank:
            reply = safety.crisis_reply(detection)
            escalation = Escalation(
                id=uuid.uuid4().hex,
                at=now,
                user_key=key,
                level=detection.level,
                category=detection.category,
                rule=detection.rule,
                channel=incoming.channel,
                resources=safety.resources_for(detection),
            )
            session = await self.sessions.get(key, now, timeout=CRISIS_READ_TIMEOUT)
            session.crisis_level, session.crisis_at = detection.level, now
            self._finish(session, now)
            self.sessions.count(f"escalations.{detection.level.value}", now)
            await self.escalator.record(escalation)
            return Outcome((reply,), None, detection, escalation)
        session = await self.sessions.get(key, now)
        try:
            match, replies = self._answer(incoming, session)
        except Exception:
            log.exception("answering failed; sending an apology")
            match, replies = None, [Reply(APOLOGY, ReplyKind.NOTICE)]
        self._finish(session, now)
        self.sessions.count("fallbacks" if match is not None and match.intent is None else "answers", now)
        return Outcome(tuple(replies), match, detection)

    def _screen(self, text: str) -> Detection | None:
        try:
            return safety.detect(text)
        except Exception:
            log.exception("the crisis screen failed; answering with crisis resources to be safe")
            return safety.SCREEN_FAILED

    def _finish(self, session: Session, now: float) -> None:
        session.turns += 1
        session.last_seen = now
        self.sessions.put(session)

    def _answer(self, incoming: Incoming, session: Session) -> tuple[Match | None, list[Reply]]:
        catalog, matcher = self.catalog, self.matcher
        if catalog is None or matcher is None:
            return None, [Reply(NO_CONTENT, ReplyKind.NOTICE)]
        if incoming.topic in catalog.intents:
            match = Match(incoming.topic, 100.0, reason="chosen")
        else:
            match = matcher.match(incoming.text)
        if match.intent is None:
            return match, [self._fallback(catalog, match)]
        intent = catalog.intents[match.intent]
        if intent.action == "continue":
            last = catalog.intents.get(session.last_intent or "")
            if last is None:
                return match, [Reply(WHICH_TOPIC, suggestions=self._menu(catalog, ()))]
            intent = last
        passage = self._next_passage(catalog, intent, session)
        return match, [self._render(catalog, passage)]

    @staticmethod
    def _next_passage(catalog: Catalog, intent: Intent, session: Session) -> Passage:
        unseen = [passage_id for passage_id in intent.responses if passage_id not in session.shown]
        if not unseen:
            session.shown.difference_update(intent.responses)
            unseen = list(intent.responses)
        passage = catalog.passages[unseen[0]]
        session.shown.add(passage.id)
        if passage.quoted:
            session.last_intent = intent.id
        return passage

    def _render(self, catalog: Catalog, passage: Passage) -> Reply:
        suggestions = tuple(
            Suggestion(intent_id, catalog.intents[intent_id].title or intent_id)
            for intent_id in passage.follow_ups[:MAX_SUGGESTIONS]
        )
        source = None
        if passage.quoted:
            source = f"From the article “{catalog.article_title}”, section “{passage.section}”"
        return Reply(passage.text, ReplyKind.ANSWER, suggestions, source)

    def _fallback(self, catalog: Catalog, match: Match) -> Reply:
        guesses = [c.intent for c in match.candidates[:2] if catalog.intents[c.intent].title]
        if match.reason == "ambiguous" and len(guesses) == 2:
            return Reply(UNSURE_BETWEEN, ReplyKind.FALLBACK, self._menu(catalog, guesses, fill=False))
        return Reply(NOT_UNDERSTOOD, ReplyKind.FALLBACK, self._menu(catalog, guesses[:1]))

    @staticmethod
    def _menu(catalog: Catalog, first: list[str] | tuple[str, ...], *, fill: bool = True) -> tuple[Suggestion, ...]:
        chosen = list(dict.fromkeys(first))
        if fill:
            chosen += [intent.id for intent in catalog.menu() if intent.id not in chosen]
        return tuple(Suggestion(i, catalog.intents[i].title or i) for i in chosen[:MAX_SUGGESTIONS])

    async def forget(self, channel: str, user_id: str) -> int:
        """Delete everything stored about a person; return how many records went."""
        key = self.user_key(channel, user_id)
        self.sessions.drop(key)
        return await self.sessions.store.forget(key)

    async def aclose(self) -> None:
        """Write what is waiting and stop background work."""
        await self.escalator.aclose()
        await self.sessions.aclose()
