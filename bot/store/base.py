"""The store's small interfaces, one per consumer, and the records they pass around."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType

from bot.errors import DatabaseFault
from bot.models import Escalation, Level, Session
from bot.store.locks import Locks


def day_of(at: float) -> str:
    """The UTC day of a timestamp, as ``YYYY-MM-DD``."""
    return datetime.fromtimestamp(at, UTC).date().isoformat()


@dataclass(frozen=True)
class Purged:
    """What a purge removed: escalation details folded into anonymous daily counts, and idle sessions."""

    escalations: int
    sessions: int
    days: tuple[str, ...]
    """The UTC days whose escalations were folded into counts."""
    kept: int = 0
    """Escalations past retention kept because nobody has acknowledged them (``keep_unacked``)."""


@dataclass(frozen=True)
class Answered:
    """An update that is answered, and what to keep of it: the person's session, a private chat's message ids."""

    update_id: int
    chat_key: str | None = None
    """The private chat's keyed hash; ``None`` elsewhere (nothing to erase there)."""
    message_ids: tuple[int, ...] = ()
    session: Session | None = None
    """The person's session as answering the update left it: saved with the mark, so never before the reply went."""


def message_rows(answered: Sequence[Answered], at: float) -> list[tuple[str, int, float]]:
    """The (chat key, message id, time) rows to remember of answered updates, for /erase."""
    return [
        (done.chat_key, message_id, at)
        for done in answered
        if done.chat_key is not None
        for message_id in done.message_ids
    ]


def answered_sessions(answered: Sequence[Answered]) -> list[Session]:
    """The sessions to save with a batch of marks: each person's last one in the batch."""
    latest = {done.session.user_key: done.session for done in answered if done.session is not None}
    return list(latest.values())


def folded_count_name(escalation: Escalation) -> str:
    """The anonymous daily counter an escalation is folded into when its details are purged."""
    return f"escalations.{escalation.level.value}.{escalation.category}"


class SessionStore(ABC):
    """What the engine's sessions need: people's sessions and the anonymous daily counters."""

    @abstractmethod
    async def load_session(self, user_key: str) -> Session | None:
        """The session of ``user_key``, or ``None`` for someone new."""

    @abstractmethod
    async def save_sessions(self, sessions: list[Session]) -> None:
        """Insert or replace these sessions, all or none."""

    @abstractmethod
    async def add_counts(self, counts: Mapping[tuple[str, str], int]) -> None:
        """Add to anonymous daily counters, keyed by (UTC day ``YYYY-MM-DD``, counter name)."""

    @abstractmethod
    async def forget(self, user_key: str) -> int:
        """Delete everything stored about ``user_key`` (session, escalations, message ids); return how many went."""


class EscalationLog(ABC):
    """What the escalator, the operators' commands and the operators' chat need: the escalation log and counts."""

    durable: bool = True
    """Whether what is written here outlives the process (a database); not for memory, so with a spool at hand
    the escalator spools escalations instead of keeping them here, and never replays a spool into it."""

    @abstractmethod
    async def record_escalations(self, escalations: list[Escalation]) -> None:
        """Store escalations, all or none; one whose id is already stored is left as it is."""

    @abstractmethod
    async def escalations(
        self, *, since: float | None = None, level: Level | None = None, unacked: bool = False, limit: int | None = None
    ) -> list[Escalation]:
        """Escalations, oldest first, filtered by time, level and acknowledgement."""

    @abstractmethod
    async def acknowledge(self, escalation_id: str, by: str, at: float) -> Escalation | None:
        """Record who acknowledged an escalation (the first acknowledgement stays); ``None`` if unknown."""

    @abstractmethod
    async def mark_alerted(self, escalation_id: str, at: float) -> bool:
        """Record that the operators' alert for an escalation was delivered; ``False`` if it is not stored here."""

    @abstractmethod
    async def unalerted(self, limit: int = 100) -> list[Escalation]:
        """Escalations whose alert is still owed, oldest first."""

    @abstractmethod
    async def escalation_feed(self, after: int = 0, limit: int = 100) -> list[tuple[int, Escalation]]:
        """Escalations stored after position ``after``, in the order they were stored, with their positions.

        Positions only grow, so a follower that remembers the last one sees every new record once,
        including old ones replayed from the spool.
        """

    @abstractmethod
    async def counts(self, day: str) -> dict[str, int]:
        """The anonymous counters of one UTC day, by name."""

    @abstractmethod
    async def all_counts(self, first_day: str | None = None) -> dict[tuple[str, str], int]:
        """Every anonymous daily counter from ``first_day`` on (all days for ``None``), by (day, name)."""

    @abstractmethod
    async def record_reminder(self, escalation_id: str, number: int, at: float) -> bool:
        """Record that reminder ``number`` (from 1) of an escalation went to the operators; ``False`` if it had.

        A reminder goes with its escalation: ``forget`` and ``purge`` delete it too.
        """

    @abstractmethod
    async def unacked_reminders(self) -> dict[str, list[float]]:
        """When the reminders of escalations nobody has acknowledged were sent, oldest first, by escalation id."""

    @abstractmethod
    async def claim_run(self, name: str, at: float) -> bool:
        """Claim the run of a once-a-period job (``retention:2026-11-29``); ``True`` only for the first claim.

        Every process on the database sees the same claims, so of several replicas exactly one gets each run.
        """

    @abstractmethod
    async def purge(self, before: float, *, keep_unacked: bool = False) -> Purged:
        """Fold escalations older than ``before`` into anonymous daily counts, delete them and idle sessions.

        ``keep_unacked`` keeps the escalations nobody has acknowledged yet (and counts them in ``kept``).
        One transaction: a purge that fails leaves everything as it was, and running it again is harmless.
        """


class TelegramJournal(ABC):
    """What the Telegram adapter needs (its tables come from its own migrations): updates, message ids, groups."""

    @abstractmethod
    async def record_updates(
        self, updates: Sequence[tuple[int, str]], at: float, lanes: Mapping[int, int] | None = None
    ) -> list[int]:
        """Journal incoming updates as (update id, raw JSON), all or none; return the ids not journalled before.

        ``lanes`` gives each update's chat (its lane; forgotten once answered), so replicas sharing the journal
        can answer a chat's updates in order (``lane_updates``).
        """

    @abstractmethod
    async def answer_updates(self, answered: Sequence[Answered], at: float) -> None:
        """Mark updates answered (text gone, ids kept), save the sessions they left, remember message ids for /erase.

        ``Answered.session`` is the session an update's answer left. All or none, in one transaction: the bot
        crosses off a batch of answered updates at a time, and a person's session is never on disk ahead of the
        mark of the update whose reply it assumes was seen.
        """

    @abstractmethod
    async def unanswered_updates(self) -> list[tuple[int, str]]:
        """Journalled updates not answered yet, as (update id, raw JSON), oldest first."""

    @abstractmethod
    async def lane_updates(self, lane: int) -> list[tuple[int, str]]:
        """One chat's journalled updates not answered yet, as (update id, raw JSON), oldest first."""

    @abstractmethod
    async def waiting_lanes(self, before: float) -> list[int]:
        """The chats with an update journalled before ``before`` and not answered yet (left by a replica that died)."""

    @abstractmethod
    async def purge_updates(self, before: float) -> int:
        """Delete the ids of updates answered before ``before``; return how many went."""

    @abstractmethod
    async def message_ids(self, chat_key: str) -> list[int]:
        """The remembered message ids of a chat, oldest first."""

    @abstractmethod
    async def drop_message_ids(self, chat_key: str) -> int:
        """Forget every remembered message id of a chat; return how many went."""

    @abstractmethod
    async def purge_message_ids(self, before: float) -> int:
        """Forget message ids remembered before ``before`` (too old to delete anyway); return how many went."""

    @abstractmethod
    async def tell_group_once(self, group_key: str, at: float) -> bool:
        """Record that a group was told the bot only talks in private; ``True`` only the first time."""


class Store(SessionStore, EscalationLog, TelegramJournal):
    """One database behind every interface: what the service hands to adapters and the CLI."""

    where: str
    """Where the data lives, for messages (a file path, a server and database, ``memory``); never a password."""
    locks: Locks
    """Named locks for run-once jobs and chats, shared with every process on this database (``Locks.shared``)."""
    migrated: tuple[str, ...] = ()
    """The migrations the last ``open()`` applied, in order (none for memory, or for a database already current)."""

    async def __aenter__(self) -> Store:
        await self.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    @abstractmethod
    async def open(self) -> None:
        """Make the store ready: connect, and apply pending migrations if asked to (only the bot and ``migrate``)."""

    @abstractmethod
    async def close(self) -> None:
        """Release the store; safe to call twice."""

    @abstractmethod
    async def ping(self) -> None:
        """A cheap read that proves the store answers (the health check); raises ``StoreError`` if it does not."""

    async def check(self) -> DatabaseFault | None:
        """What is wrong with the database as a whole (its file gone, replaced, corrupt), checked cheaply; or none."""
        return None
