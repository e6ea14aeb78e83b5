"""The platform-neutral core: crisis screen first, then intent, passage, session and replies."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

from bot import redact, safety
from bot.content import Catalog
from bot.crisis import CrisisScreen
from bot.escalation import Escalator
from bot.health import Faults
from bot.lexicon import CATEGORIES
from bot.matcher import Matcher, MatcherSettings
from bot.meaning import MeaningIndex, Vectors, index_of
from bot.metrics import Metrics
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
    Track,
)
from bot.rules import floor
from bot.sessions import Sessions
from bot.store import Store

log = logging.getLogger("unhooked.engine")

MAX_SUGGESTIONS = 3
GUESS_WITHIN = 15.0
"""A fallback suggests the best guess first when it scored within this much of the threshold."""
CRISIS_READ_TIMEOUT = 0.25
"""Seconds a crisis turn waits for the person's session before going on without it."""
CRISIS_QUIET = 2 * 60 * 60
"""Seconds without a message after which a crisis state ends on its own."""

NOT_UNDERSTOOD = "I'm not sure I understood that. Could you say it another way? Or pick one of these topics:"
UNSURE_BETWEEN = "I'm not sure which of these you mean. Could you pick one, or say a little more?"
WHICH_TOPIC = "Happy to go on. Which topic would you like to hear more about?"
APOLOGY = "Sorry, something went wrong on my side. Could you try saying that again?"
NO_CONTENT = "I can't reach my reading material right now, so I can't answer that. Please try again a little later."
SEEN_ALL = (
    "You have now read everything the article says {about}, so I won't repeat it as if it were new."
    " These related topics have more:"
)
SEEN_EVERYTHING = (
    "You have now read everything the article says {about}, and everything on the other topics too,"
    " so there is nothing new I can quote."
)
HELD_BACK = (
    "That part of the article describes violence, so I'll leave it out for now. You can ask for it another time."
)


@dataclass(frozen=True)
class Outcome:
    """What the engine made of one message: the replies and how it decided."""

    replies: tuple[Reply, ...]
    match: Match | None = None
    detection: Detection | None = None
    escalation: Escalation | None = None
    """The record made for operators, already stored (database or spool) when ``handle`` returns."""
    session: Session | None = None
    """The person's session as this turn left it: served to their next message at once, and written only once the
    adapter has delivered the replies (``Engine.delivered``, or the adapter's own durable step), so a crash
    before delivery never leaves a passage marked as seen that the person never saw."""


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
        excerpts: bool = False,
        metrics: Metrics | None = None,
        faults: Faults | None = None,
        screen: CrisisScreen | None = None,
        vectors: Vectors | None = None,
    ) -> None:
        self.metrics = metrics or (escalator.metrics if escalator else Metrics())
        """What operators can count (``/metrics``): messages, intents, fallbacks, escalations, latency..."""
        self.faults = faults or (escalator.faults if escalator else Faults())
        """What is failing right now (``/healthz``)."""
        self.sessions = Sessions(store, metrics=self.metrics, faults=self.faults)
        self.excerpts = excerpts
        """Whether escalation records keep a redacted excerpt of the message (an operator's opt-in)."""
        self.escalator = escalator or Escalator(store, clock=clock, metrics=self.metrics, faults=self.faults)
        self._secret = secret
        self._clock = clock
        self._matcher_settings = matcher_settings
        self.vectors = vectors
        """The examples' sentence embeddings, kept across reloads; ``None`` matches by rapidfuzz alone."""
        self.catalog: Catalog | None = None
        self.matcher: Matcher | None = None
        self.screen = screen or CrisisScreen(faults=self.faults, metrics=self.metrics)
        """The one crisis screen: lexicon floor, moderators' rules and the learned model; adapters screen through it."""
        self.use(catalog)

    def use(self, catalog: Catalog | None) -> None:
        """Serve ``catalog`` from the next message on (``None`` serves crisis replies only).

        The crisis screen always runs the floor's rules, plus the catalogue's own safety rules, plus the model.
        """
        matcher = Matcher(catalog.phrases(), self._matcher_settings, self._meaning(catalog)) if catalog else None
        rules = floor() + catalog.safety_rules if catalog else floor()
        self.screen.use(rules)
        self.catalog, self.matcher = catalog, matcher
        categories = {*CATEGORIES, *(rule.category for rule in rules), safety.SCREEN_FAILED.category}
        self.metrics.serving(catalog.intents if catalog else (), categories)
        self.metrics.content_loaded.set(1 if catalog else 0)
        self.metrics.content_intents.set(len(catalog.intents) if catalog else 0)

    async def learn_meaning(self, vectors: Vectors) -> None:
        """Embed the examples on a worker thread, then match by meaning too; rapidfuzz answers alone meanwhile."""
        try:
            if self.catalog is not None:
                await asyncio.to_thread(index_of, self.catalog.intents.values(), vectors)
        except Exception:
            log.exception("could not embed the examples; rapidfuzz matches alone")
            return
        self.vectors = vectors
        self.use(self.catalog)  # the vectors are kept now: only what a reload changed meanwhile is embedded here

    def _meaning(self, catalog: Catalog) -> MeaningIndex | None:
        """The catalogue's examples by meaning (only new or changed ones are embedded), or ``None``."""
        try:
            return index_of(catalog.intents.values(), self.vectors)
        except Exception:
            log.exception("could not embed the examples; rapidfuzz matches alone until the next reload")
            return None

    def user_key(self, channel: str, user_id: str) -> str:
        """The keyed hash that stands for a person everywhere the bot stores or logs anything."""
        digest = hmac.new(self._secret, f"{channel}:{user_id}".encode(errors="surrogatepass"), hashlib.sha256)
        return digest.hexdigest()[:32]

    async def handle(self, incoming: Incoming) -> Outcome:
        """Answer one message. Never raises for anything a person can type.

        The crisis screen runs first. A crisis or imminent detection gets the crisis reply alone
        and is recorded for operators. While a crisis state lasts, every reply keeps help in view
        and asks whether the person is safe, until they say they are or the session goes quiet
        for ``CRISIS_QUIET``; an ambiguous message in that state counts as a crisis. Otherwise an
        ambiguous message gets a gentle check-in before the answer. The session the turn leaves is served to
        the person's next message at once and written once the adapter delivered the replies (``Outcome.session``).
        """
        started = time.perf_counter()
        try:
            outcome = await self._handle(incoming)
        finally:
            self.metrics.handling.observe(time.perf_counter() - started)
        self.metrics.messages.inc(incoming.channel)
        match = outcome.match
        if match is not None and match.intent is not None:
            self.metrics.intents.inc(match.intent)
        elif match is not None:
            self.metrics.fallbacks.inc(match.reason)
        return outcome

    async def _handle(self, incoming: Incoming) -> Outcome:
        screened, detection = self.screen.read(incoming.text)
        key = self.user_key(incoming.channel, incoming.user_id)
        now = self._clock()
        self.sessions.count("messages", now)
        if detection is not None and detection.level.rank >= Level.CRISIS.rank:
            return await self._crisis(incoming, key, now, detection)
        session = await self.sessions.get(key, now)
        in_crisis = self._in_crisis(session, now)
        if in_crisis and detection is not None:
            return await self._crisis(incoming, key, now, detection, session)
        replies: list[Reply] = []
        if in_crisis and screened is not None and safety.says_safe(screened):
            session.crisis_level = session.crisis_at = session.crisis_track = None
            in_crisis = False
            replies.append(safety.SAFE_ACK)
            if safety.only_says_safe(screened):
                self._finish(session, now)
                return Outcome(tuple(replies), session=session)
        elif in_crisis:
            replies.append(safety.reminder(session.crisis_track or Track.SELF))
        elif detection is not None:
            replies.append(safety.concern_reply(detection))
            self.sessions.count("concerns", now)
            self.metrics.concerns.inc(detection.category)
        try:
            match, answers = self._answer(incoming, session, calm=in_crisis)
        except Exception:
            self.metrics.handler_errors.inc("answer")
            log.exception("answering failed; sending an apology")
            match, answers = None, [Reply(APOLOGY, ReplyKind.NOTICE)]
        self._finish(session, now)
        self.sessions.count("fallbacks" if match is not None and match.intent is None else "answers", now)
        if replies and [answer.kind for answer in answers] == [ReplyKind.FALLBACK]:
            answers = []  # the check-in already asks a question; "I didn't understand" would talk over it
        return Outcome((*replies, *answers), match, detection, session=session)

    async def _crisis(
        self, incoming: Incoming, key: str, now: float, detection: Detection, session: Session | None = None
    ) -> Outcome:
        """The crisis reply; the record and the session are kept on a best-effort basis, never at its cost.

        In a crisis state the detection reaches its rule's level for that state (``safety.in_crisis_window``),
        also when it is already a crisis: "I'm going to do it tonight" after "I want to die" is imminent.
        """
        if session is None:
            try:
                session = await self.sessions.get(key, now, timeout=CRISIS_READ_TIMEOUT)
            except Exception:
                self.metrics.handler_errors.inc("crisis_bookkeeping")
                log.exception("reading the session failed; the crisis reply goes out anyway")
        if session is not None and self._in_crisis(session, now):
            detection = safety.in_crisis_window(detection)
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
            excerpt=self._excerpt(incoming.text),
        )
        self.metrics.escalations.inc(detection.level.value, detection.category)
        finished = None
        try:
            if session is not None:
                self._enter_crisis(session, detection, now)
                self._finish(session, now)
                finished = session
                self.sessions.count(f"escalations.{detection.level.value}", now)
        except Exception:
            self.metrics.handler_errors.inc("crisis_bookkeeping")
            log.exception("bookkeeping for escalation %s failed; the crisis reply goes out anyway", escalation.id)
        try:  # apart from the session's bookkeeping: a bug there must not cost the record
            await self.escalator.record(escalation)
        except Exception:
            self.metrics.handler_errors.inc("crisis_bookkeeping")
            log.exception("recording escalation %s failed; the crisis reply goes out anyway", escalation.id)
        return Outcome((reply,), None, detection, escalation, finished)

    def _excerpt(self, text: str) -> str | None:
        """A redacted excerpt when operators opted in; never one that could stop the crisis reply."""
        if not self.excerpts:
            return None
        try:
            return redact.excerpt(text)
        except Exception:
            self.metrics.handler_errors.inc("excerpt")
            log.exception("could not redact an excerpt; the escalation is recorded without one")
            return None

    @staticmethod
    def _in_crisis(session: Session, now: float) -> bool:
        """Whether the person is in a crisis state; a state that went quiet ends here."""
        if session.crisis_level is None:
            return False
        if now - session.last_seen >= CRISIS_QUIET:
            session.crisis_level = session.crisis_at = session.crisis_track = None
            return False
        return True

    def _enter_crisis(self, session: Session, detection: Detection, now: float) -> None:
        """Enter or refresh the crisis state: the highest level and both tracks, once seen, stay in view."""
        level, track = detection.level, detection.track
        if self._in_crisis(session, now) and session.crisis_level is not None:
            level = max(level, session.crisis_level, key=lambda found: found.rank)
            track = Track.OTHERS if Track.OTHERS in (session.crisis_track, track) else track
        session.crisis_level, session.crisis_at, session.crisis_track = level, now, track

    def _finish(self, session: Session, now: float) -> None:
        session.turns += 1
        session.last_seen = now
        self.sessions.hold(session)

    def delivered(self, outcome: Outcome) -> None:
        """The outcome's replies reached the person: write the session the turn left, with the next batch.

        An adapter with a durable step of its own writes ``outcome.session`` there instead (``Sessions.saved``).
        """
        if outcome.session is not None:
            self.sessions.put(outcome.session)

    def _answer(self, incoming: Incoming, session: Session, *, calm: bool) -> tuple[Match | None, list[Reply]]:
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
        reply = self._next_reply(catalog, intent, session, calm=calm)
        if match.also in catalog.intents and catalog.intents[match.also].title and match.also != intent.id:
            also = Suggestion(match.also, catalog.intents[match.also].title or match.also)
            rest = [s for s in reply.suggestions if s.intent != match.also]
            reply = replace(reply, suggestions=(also, *rest)[:MAX_SUGGESTIONS])
        return match, [reply]

    def _next_reply(self, catalog: Catalog, intent: Intent, session: Session, *, calm: bool) -> Reply:
        """The next passage of ``intent`` this person has not seen, or a plain word that there is none.

        In a crisis turn no passage that describes violence is quoted. A quoted passage is never
        sent again as if it were new (nor its twin under another intent's id): once every passage
        of a topic was seen, the person is told so and offered related topics. The bot's own lines
        (small talk) may come round again.
        """
        allowed = list(intent.responses)
        if calm:
            allowed = [pid for pid in allowed if not safety.describes_violence(catalog.passages[pid].text)]
        seen = {catalog.passages[pid].text for pid in session.shown if pid in catalog.passages}
        unseen = [pid for pid in allowed if catalog.passages[pid].text not in seen]
        if not unseen and allowed and catalog.conversational(intent):
            session.shown.difference_update(allowed)
            unseen = allowed
        if not unseen:
            held = [pid for pid in intent.responses if pid not in allowed and catalog.passages[pid].text not in seen]
            if held:
                return Reply(HELD_BACK, ReplyKind.NOTICE)
            return self._seen_all(catalog, intent, session, seen)
        passage = catalog.passages[unseen[0]]
        session.shown.add(passage.id)
        if passage.quoted:
            session.last_intent = intent.id
        return self._render(catalog, passage)

    def _seen_all(self, catalog: Catalog, intent: Intent, session: Session, seen: set[str]) -> Reply:
        """Every passage of ``intent`` was seen: say so, and offer related topics with something left to read."""
        session.last_intent = intent.id
        related = [topic for pid in intent.responses for topic in catalog.passages[pid].follow_ups]
        related += [topic.id for topic in catalog.menu()]
        fresh = [
            topic
            for topic in dict.fromkeys(related)
            if topic != intent.id
            and catalog.intents[topic].title
            and any(catalog.passages[pid].text not in seen for pid in catalog.intents[topic].responses)
        ]
        about = f"about “{intent.title}”" if intent.title else "on this"
        text = (SEEN_ALL if fresh else SEEN_EVERYTHING).format(about=about)
        return Reply(text, ReplyKind.NOTICE, self._menu(catalog, fresh, fill=False))

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
        near = self.matcher.settings.threshold - GUESS_WITHIN if self.matcher else 0
        guesses = [c.intent for c in match.candidates[:2] if catalog.intents[c.intent].title and c.score >= near]
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
        self.screen.close()
