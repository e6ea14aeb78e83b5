"""The memory backend: every interface in dicts; for tests and for a chat that should leave no trace."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.models import Escalation, Level, Session
from bot.store import codec
from bot.store.base import Answered, Purged, Store, answered_sessions, day_of, folded_count_name
from bot.store.locks import LocalLocks


def _copy(session: Session) -> Session:
    return dataclasses.replace(session, shown=set(session.shown))


@dataclass(frozen=True)
class _Update:
    """One journalled update."""

    received_at: float
    raw: str | None
    answered_at: float | None = None
    lane: int | None = None


class MemoryStore(Store):
    """Keeps everything in dicts until the object goes."""

    durable = False

    def __init__(self) -> None:
        self.where = "memory"
        self.locks = LocalLocks()
        self._sessions: dict[str, Session] = {}
        self._escalations: dict[str, Escalation] = {}
        self._positions: dict[str, int] = {}
        self._last_position = 0
        self._counts: Counter[tuple[str, str]] = Counter()
        self._updates: dict[int, _Update] = {}
        self._message_ids: dict[tuple[str, int], float] = {}
        self._told_groups: dict[str, float] = {}
        self._job_runs: dict[str, float] = {}
        self._reminders: dict[tuple[str, int], float] = {}

    async def open(self) -> None:
        """Nothing to open."""

    async def close(self) -> None:
        """Nothing to close; the data stay until the object goes."""

    async def ping(self) -> None:
        """Memory always answers."""

    async def load_session(self, user_key: str) -> Session | None:
        session = self._sessions.get(user_key)
        return _copy(session) if session else None

    async def save_sessions(self, sessions: list[Session]) -> None:
        for session in sessions:
            self._sessions[session.user_key] = _copy(session)

    async def forget(self, user_key: str) -> int:
        gone = [key for key, escalation in self._escalations.items() if escalation.user_key == user_key]
        self._drop(gone)
        return len(gone) + (1 if self._sessions.pop(user_key, None) else 0) + await self.drop_message_ids(user_key)

    async def add_counts(self, counts: Mapping[tuple[str, str], int]) -> None:
        self._counts.update(counts)

    async def counts(self, day: str) -> dict[str, int]:
        return {name: value for (when, name), value in self._counts.items() if when == day}

    async def record_escalations(self, escalations: list[Escalation]) -> None:
        for escalation in escalations:
            if escalation.id not in self._escalations:
                self._escalations[escalation.id] = escalation
                self._last_position += 1
                self._positions[escalation.id] = self._last_position

    async def escalations(
        self, *, since: float | None = None, level: Level | None = None, unacked: bool = False, limit: int | None = None
    ) -> list[Escalation]:
        found = [
            e
            for e in sorted(self._escalations.values(), key=lambda e: (e.at, e.id))
            if (since is None or e.at >= since) and (level is None or e.level is level) and not (unacked and e.acked_by)
        ]
        return found[:limit] if limit is not None else found

    async def acknowledge(self, escalation_id: str, by: str, at: float) -> Escalation | None:
        found = self._escalations.get(escalation_id)
        if found is not None and found.acked_by is None:
            found = self._escalations[escalation_id] = dataclasses.replace(found, acked_by=by, acked_at=at)
        return found

    async def mark_alerted(self, escalation_id: str, at: float) -> bool:
        found = self._escalations.get(escalation_id)
        if found is not None:
            self._escalations[escalation_id] = dataclasses.replace(found, alerted_at=at)
        return found is not None

    async def unalerted(self, limit: int = 100) -> list[Escalation]:
        return [e for e in await self.escalations() if e.alerted_at is None][:limit]

    async def escalation_feed(self, after: int = 0, limit: int = 100) -> list[tuple[int, Escalation]]:
        found = sorted(
            (position, self._escalations[key]) for key, position in self._positions.items() if position > after
        )
        return found[:limit]

    async def all_counts(self, first_day: str | None = None) -> dict[tuple[str, str], int]:
        return {key: value for key, value in sorted(self._counts.items()) if first_day is None or key[0] >= first_day}

    async def purge(self, before: float, *, keep_unacked: bool = False) -> Purged:
        past = [e for e in self._escalations.values() if e.at < before]
        old = [e for e in past if not keep_unacked or e.acked_by is not None]
        self._counts.update(Counter((day_of(e.at), folded_count_name(e)) for e in old))
        self._drop([escalation.id for escalation in old])
        idle = [key for key, session in self._sessions.items() if session.last_seen < before]
        for key in idle:
            del self._sessions[key]
        return Purged(len(old), len(idle), tuple(sorted({day_of(e.at) for e in old})), len(past) - len(old))

    async def record_updates(
        self, updates: Sequence[tuple[int, str]], at: float, lanes: Mapping[int, int] | None = None
    ) -> list[int]:
        raw, lanes = dict(updates), lanes or {}
        fresh = [update_id for update_id in raw if update_id not in self._updates]
        for update_id in fresh:
            self._updates[update_id] = _Update(at, raw[update_id], lane=lanes.get(update_id))
        return fresh

    async def answer_updates(self, answered: Sequence[Answered], at: float) -> None:
        await self.save_sessions(answered_sessions(answered))
        for done in answered:
            found = self._updates.get(done.update_id)
            if found is not None and found.answered_at is None:
                self._updates[done.update_id] = _Update(found.received_at, None, at)  # its lane goes too
            if done.chat_key is not None:
                for message_id in done.message_ids:
                    self._message_ids.setdefault((done.chat_key, message_id), at)

    async def unanswered_updates(self) -> list[tuple[int, str]]:
        return [(key, row.raw) for key, row in sorted(self._updates.items()) if row.raw is not None]

    async def lane_updates(self, lane: int) -> list[tuple[int, str]]:
        waiting = sorted(self._updates.items())
        return [(key, row.raw) for key, row in waiting if row.raw is not None and row.lane == lane]

    async def waiting_lanes(self, before: float) -> list[int]:
        waiting = {row.lane for row in self._updates.values() if row.raw is not None and row.received_at < before}
        return sorted(lane for lane in waiting if lane is not None)

    async def purge_updates(self, before: float) -> int:
        gone = [key for key, row in self._updates.items() if row.answered_at is not None and row.answered_at < before]
        for key in gone:
            del self._updates[key]
        return len(gone)

    async def message_ids(self, chat_key: str) -> list[int]:
        found = [(at, message_id) for (chat, message_id), at in self._message_ids.items() if chat == chat_key]
        return [message_id for _, message_id in sorted(found)]

    async def drop_message_ids(self, chat_key: str) -> int:
        gone = [key for key in self._message_ids if key[0] == chat_key]
        for key in gone:
            del self._message_ids[key]
        return len(gone)

    async def purge_message_ids(self, before: float) -> int:
        gone = [key for key, at in self._message_ids.items() if at < before]
        for key in gone:
            del self._message_ids[key]
        return len(gone)

    def _drop(self, escalation_ids: Sequence[str]) -> None:
        """Delete escalations, with their positions and reminders."""
        for key in escalation_ids:
            del self._escalations[key]
            self._positions.pop(key, None)
        for reminder in [reminder for reminder in self._reminders if reminder[0] in escalation_ids]:
            del self._reminders[reminder]

    async def record_reminder(self, escalation_id: str, number: int, at: float) -> bool:
        if escalation_id not in self._escalations or (escalation_id, number) in self._reminders:
            return False
        self._reminders[(escalation_id, number)] = at
        return True

    async def unacked_reminders(self) -> dict[str, list[float]]:
        unacked = {key for key, escalation in self._escalations.items() if escalation.acked_by is None}
        return codec.reminders([(key, at) for (key, _), at in sorted(self._reminders.items()) if key in unacked])

    async def claim_run(self, name: str, at: float) -> bool:
        if name in self._job_runs:
            return False
        self._job_runs[name] = at
        return True

    async def tell_group_once(self, group_key: str, at: float) -> bool:
        if group_key in self._told_groups:
            return False
        self._told_groups[group_key] = at
        return True
