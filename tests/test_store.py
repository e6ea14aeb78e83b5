"""One contract per store interface, run on every backend (the ``store`` fixture: memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio

from bot.models import Level, Track
from bot.store import Answered, Purged, Store, run_once
from tests.records import escalation, session


class TestSessionStoreContract:
    """What the engine's sessions rely on, on every backend."""

    async def test_unknown_person_has_no_session(self, store: Store) -> None:
        assert await store.load_session("nobody") is None

    async def test_a_saved_session_reads_back_equal(self, store: Store) -> None:
        saved = session(crisis_level=Level.IMMINENT, crisis_at=150.0, crisis_track=Track.OTHERS)
        await store.save_sessions([saved])
        assert await store.load_session("k1") == saved

    async def test_saving_again_replaces(self, store: Store) -> None:
        await store.save_sessions([session()])
        await store.save_sessions([session(turns=4, last_intent=None, shown=set())])
        loaded = await store.load_session("k1")
        assert (loaded.turns, loaded.last_intent, loaded.shown) == (4, None, set())

    async def test_a_batch_saves_every_session(self, store: Store) -> None:
        await store.save_sessions([session(f"k{n}") for n in range(50)])
        assert all([await store.load_session(f"k{n}") for n in range(50)])

    async def test_changing_a_loaded_session_does_not_change_the_store(self, store: Store) -> None:
        await store.save_sessions([session()])
        loaded = await store.load_session("k1")
        loaded.shown.add("changed")
        assert "changed" not in (await store.load_session("k1")).shown

    async def test_forget_removes_one_person_only(self, store: Store) -> None:
        await store.save_sessions([session("a"), session("b")])
        assert await store.forget("a") == 1
        assert await store.forget("a") == 0
        assert await store.load_session("a") is None
        assert await store.load_session("b") is not None


class TestEscalationLogContract:
    """What the escalator, the operators' commands and the operators' chat rely on, on every backend."""

    async def test_escalations_read_back_in_time_order(self, store: Store) -> None:
        await store.record_escalations([escalation("b", at=20.0), escalation("a", at=10.0, level=Level.IMMINENT)])
        assert [e.id for e in await store.escalations()] == ["a", "b"]
        assert await store.escalations() == [escalation("a", at=10.0, level=Level.IMMINENT), escalation("b", at=20.0)]

    async def test_recording_the_same_escalation_twice_keeps_one(self, store: Store) -> None:
        await store.record_escalations([escalation("a")])
        await store.record_escalations([escalation("a", category="changed")])
        assert [e.category for e in await store.escalations()] == ["suicidal"]

    async def test_escalations_filter_by_time_level_and_acknowledgement(self, store: Store) -> None:
        await store.record_escalations(
            [escalation("a", at=10.0), escalation("b", at=20.0, level=Level.IMMINENT), escalation("c", at=30.0)]
        )
        await store.acknowledge("c", "sam", 31.0)
        assert [e.id for e in await store.escalations(since=20.0)] == ["b", "c"]
        assert [e.id for e in await store.escalations(level=Level.IMMINENT)] == ["b"]
        assert [e.id for e in await store.escalations(unacked=True)] == ["a", "b"]
        assert [e.id for e in await store.escalations(limit=1)] == ["a"]

    async def test_the_first_acknowledgement_stays(self, store: Store) -> None:
        await store.record_escalations([escalation("a")])
        first = await store.acknowledge("a", "sam", 50.0)
        again = await store.acknowledge("a", "kim", 60.0)
        assert (first.acked_by, first.acked_at) == ("sam", 50.0)
        assert again == first
        assert await store.acknowledge("nope", "sam", 50.0) is None

    async def test_alerts_owed_until_marked(self, store: Store) -> None:
        await store.record_escalations([escalation("a", at=1.0), escalation("b", at=2.0)])
        await store.mark_alerted("a", 5.0)
        assert [e.id for e in await store.unalerted()] == ["b"]
        assert (await store.escalations())[0].alerted_at == 5.0

    async def test_the_feed_gives_each_escalation_once_in_the_order_stored(self, store: Store) -> None:
        await store.record_escalations([escalation("late", at=50.0), escalation("early", at=10.0)])
        first = await store.escalation_feed()
        assert [e.id for _, e in first] == ["late", "early"]
        await store.record_escalations([escalation("replayed", at=1.0)])
        after = await store.escalation_feed(first[-1][0])
        assert [e.id for _, e in after] == ["replayed"]
        assert await store.escalation_feed(after[-1][0]) == []
        assert [e.id for _, e in await store.escalation_feed(0, limit=1)] == ["late"]

    async def test_feed_positions_are_never_reused(self, store: Store) -> None:
        await store.record_escalations([escalation("a"), escalation("b", user_key="k2")])
        last = (await store.escalation_feed())[-1][0]
        await store.forget("k2")
        await store.record_escalations([escalation("c")])
        assert [(e.id, position > last) for position, e in await store.escalation_feed(last)] == [("c", True)]

    async def test_all_counts_reads_every_day_from_a_first_day(self, store: Store) -> None:
        await store.add_counts({("2026-11-01", "messages"): 2, ("2026-11-03", "concerns"): 1})
        assert await store.all_counts() == {("2026-11-01", "messages"): 2, ("2026-11-03", "concerns"): 1}
        assert await store.all_counts("2026-11-02") == {("2026-11-03", "concerns"): 1}

    async def test_purge_folds_old_escalations_into_counts_and_deletes_idle_sessions(self, store: Store) -> None:
        day = 86400.0
        await store.record_escalations(
            [
                escalation("old1", at=1 * day, level=Level.IMMINENT, category="attempt"),
                escalation("old2", at=1 * day + 60),
                escalation("old3", at=2 * day),
                escalation("new", at=40 * day),
            ]
        )
        await store.save_sessions([session("idle", last_seen=1 * day), session("active", last_seen=40 * day)])
        result = await store.purge(30 * day)
        assert result == Purged(escalations=3, sessions=1, days=("1970-01-02", "1970-01-03"))
        assert [e.id for e in await store.escalations()] == ["new"]
        assert await store.load_session("idle") is None and await store.load_session("active") is not None
        assert await store.all_counts() == {
            ("1970-01-02", "escalations.imminent.attempt"): 1,
            ("1970-01-02", "escalations.crisis.suicidal"): 1,
            ("1970-01-03", "escalations.crisis.suicidal"): 1,
        }
        assert await store.purge(30 * day) == Purged(0, 0, ())
        assert len(await store.all_counts()) == 3

    async def test_purge_can_keep_escalations_nobody_has_acknowledged(self, store: Store) -> None:
        day = 86400.0
        await store.record_escalations([escalation("seen", at=1 * day), escalation("waiting", at=1 * day + 60)])
        await store.acknowledge("seen", "sam", 2 * day)
        result = await store.purge(30 * day, keep_unacked=True)
        assert (result.escalations, result.kept) == (1, 1)
        assert [e.id for e in await store.escalations()] == ["waiting"]
        assert await store.all_counts() == {("1970-01-02", "escalations.crisis.suicidal"): 1}

    async def test_a_jobs_run_is_claimed_once_even_by_tasks_at_once(self, store: Store) -> None:
        claims = await asyncio.gather(*(store.claim_run("retention:2027-01-15", 10.0 + n) for n in range(8)))
        assert sorted(claims) == [False] * 7 + [True]
        assert await store.claim_run("retention:2027-01-16", 20.0) is True

    async def test_reminders_are_recorded_once_each_and_go_with_their_escalation(self, store: Store) -> None:
        day = 86400.0
        await store.record_escalations(
            [escalation("a", at=1 * day, level=Level.IMMINENT), escalation("b", at=1 * day + 60, user_key="k2")]
        )
        assert await store.unacked_reminders() == {}
        claims = await asyncio.gather(*(store.record_reminder("a", 1, 1 * day + 900 + n) for n in range(4)))
        assert sorted(claims) == [False] * 3 + [True]
        assert await store.record_reminder("a", 2, 1 * day + 1800) is True
        assert await store.record_reminder("b", 1, 1 * day + 960) is True
        assert await store.record_reminder("nobody", 1, 1 * day) is False
        reminded = await store.unacked_reminders()
        assert set(reminded) == {"a", "b"} and len(reminded["a"]) == 2 and reminded["a"][1] == 1 * day + 1800
        await store.acknowledge("b", "sam", 2 * day)
        assert list(await store.unacked_reminders()) == ["a"]
        await store.forget("k1")
        assert await store.unacked_reminders() == {}
        assert await store.record_reminder("a", 3, 2 * day) is False
        await store.record_escalations([escalation("a", at=1 * day, level=Level.IMMINENT)])
        assert await store.unacked_reminders() == {}  # the forgotten escalation's reminders went with it
        await store.record_reminder("a", 1, 2 * day)
        await store.purge(30 * day)
        assert await store.unacked_reminders() == {}
        assert await store.record_reminder("a", 2, 31 * day) is False

    async def test_daily_counts_add_up_per_day(self, store: Store) -> None:
        await store.add_counts({("2026-11-29", "messages"): 3, ("2026-11-30", "messages"): 1})
        await store.add_counts({("2026-11-29", "messages"): 2, ("2026-11-29", "fallbacks"): 1})
        assert await store.counts("2026-11-29") == {"messages": 5, "fallbacks": 1}
        assert await store.counts("2026-12-01") == {}


class TestTelegramJournalContract:
    """What the Telegram adapter relies on, on every backend."""

    async def test_journalled_updates_are_new_once_and_unanswered_until_answered(self, store: Store) -> None:
        assert await store.record_updates([(3, '{"update_id": 3}'), (1, '{"update_id": 1}')], 10.0) == [3, 1]
        assert await store.record_updates([(1, "again"), (2, '{"update_id": 2}')], 11.0) == [2]
        assert await store.unanswered_updates() == [
            (1, '{"update_id": 1}'),
            (2, '{"update_id": 2}'),
            (3, '{"update_id": 3}'),
        ]
        await store.answer_updates([Answered(2)], 12.0)
        assert [update_id for update_id, _ in await store.unanswered_updates()] == [1, 3]
        assert await store.record_updates([(2, '{"update_id": 2}')], 13.0) == []
        assert await store.record_updates([], 13.0) == []

    async def test_answered_update_ids_are_purged_after_a_while(self, store: Store) -> None:
        await store.record_updates([(1, "{}"), (2, "{}"), (3, "{}")], 10.0)
        await store.answer_updates([Answered(1)], 20.0)
        await store.answer_updates([Answered(2)], 40.0)
        assert await store.purge_updates(before=30.0) == 1
        assert await store.record_updates([(1, "{}"), (2, "{}")], 50.0) == [1]
        assert [update_id for update_id, _ in await store.unanswered_updates()] == [1, 3]

    async def test_message_ids_are_remembered_per_chat_when_an_update_is_answered(self, store: Store) -> None:
        await store.record_updates([(1, "{}")], 10.0)
        await store.answer_updates([Answered(1, "chat-a", (5, 6))], 10.0)
        await store.answer_updates([Answered(2, "chat-a", (7, 6))], 20.0)
        await store.answer_updates([Answered(3, "chat-b", (5,))], 20.0)
        assert await store.message_ids("chat-a") == [5, 6, 7]
        assert await store.purge_message_ids(before=15.0) == 2
        assert await store.message_ids("chat-a") == [7]
        assert await store.drop_message_ids("chat-a") == 1
        assert await store.message_ids("chat-a") == []
        assert await store.message_ids("chat-b") == [5]

    async def test_a_batch_of_answered_updates_is_marked_in_one_go(self, store: Store) -> None:
        await store.record_updates([(1, "{}"), (2, "{}"), (3, "{}")], 10.0)
        await store.answer_updates([Answered(1, "chat-a", (5,)), Answered(3, "chat-b", (6, 7)), Answered(99)], 20.0)
        assert [update_id for update_id, _ in await store.unanswered_updates()] == [2]
        assert (await store.message_ids("chat-a"), await store.message_ids("chat-b")) == ([5], [6, 7])
        await store.answer_updates([Answered(1)], 30.0)  # marking again changes nothing
        await store.answer_updates([], 30.0)
        assert await store.purge_updates(before=25.0) == 2

    async def test_the_sessions_the_answers_left_are_saved_with_their_marks(self, store: Store) -> None:
        await store.record_updates([(1, "{}"), (2, "{}"), (3, "{}")], 10.0)
        await store.save_sessions([session("k2", turns=1)])
        earlier, later = session("k1", turns=4), session("k1", turns=5, shown={"miss_them.hooked"})
        second = session("k2", turns=2)
        await store.answer_updates(
            [Answered(1, session=earlier), Answered(2, "k2", (8,), second), Answered(3, session=later)], 20.0
        )
        assert await store.load_session("k1") == later  # a person's last answer in the batch is the one kept
        assert await store.load_session("k2") == second
        assert await store.message_ids("k2") == [8]
        assert await store.unanswered_updates() == []
        later.turns = 9  # the store keeps what it was given, not the object
        assert (await store.load_session("k1")).turns == 5

    async def test_each_chats_waiting_updates_read_back_in_order_until_answered(self, store: Store) -> None:
        await store.record_updates([(3, "c"), (1, "a"), (2, "b"), (4, "d")], 10.0, {1: 7, 2: -9, 3: 7})
        await store.record_updates([(5, "e")], 20.0, {5: 7})
        assert await store.lane_updates(7) == [(1, "a"), (3, "c"), (5, "e")]
        assert await store.lane_updates(-9) == [(2, "b")]
        assert await store.waiting_lanes(before=15.0) == [-9, 7]  # update 4 has no lane
        await store.answer_updates([Answered(1), Answered(3), Answered(2)], 30.0)
        assert await store.lane_updates(7) == [(5, "e")]
        assert await store.waiting_lanes(before=15.0) == []
        assert await store.waiting_lanes(before=25.0) == [7]

    async def test_a_group_is_told_once(self, store: Store) -> None:
        assert await store.tell_group_once("g1", 10.0) is True
        assert await store.tell_group_once("g1", 20.0) is False
        assert await store.tell_group_once("g2", 20.0) is True


class TestLocksContract:
    """The named locks run-once jobs and chats take, on every backend (across processes: test_postgres_store)."""

    async def test_a_lock_is_held_once_until_released(self, store: Store) -> None:
        assert await store.locks.acquire("job") is True
        assert await store.locks.acquire("job") is False
        assert await store.locks.acquire("other", shared=True) is True
        await store.locks.release("job")
        await store.locks.release("never-taken")
        assert await store.locks.acquire("job") is True

    async def test_a_run_once_job_is_skipped_while_its_lock_is_held(self, store: Store) -> None:
        ran = []

        async def job() -> None:
            ran.append(await store.locks.acquire("purge"))

        assert await run_once(store.locks, "purge", job) is True
        assert ran == [False]  # the job ran holding its lock
        await store.locks.acquire("purge")
        assert await run_once(store.locks, "purge", job) is False
        assert ran == [False]
        await store.locks.release("purge")
        assert await run_once(store.locks, "purge", job) is True


class TestStoreContract:
    """One database behind every interface: its life cycle, and what crosses interfaces (forget, many writers)."""

    async def test_a_store_that_answers_passes_the_ping(self, store: Store) -> None:
        await store.ping()

    async def test_close_twice_is_harmless(self, store: Store) -> None:
        await store.close()
        await store.close()

    async def test_forget_removes_the_persons_escalations(self, store: Store) -> None:
        await store.save_sessions([session("k1")])
        await store.record_escalations([escalation("a", user_key="k1"), escalation("b", user_key="k2")])
        assert await store.forget("k1") == 2
        assert [e.id for e in await store.escalations()] == ["b"]

    async def test_forget_removes_the_persons_message_ids(self, store: Store) -> None:
        await store.answer_updates([Answered(1, "k1", (5, 6))], 10.0)
        await store.answer_updates([Answered(2, "k2", (5,))], 10.0)
        assert await store.forget("k1") == 2
        assert await store.message_ids("k1") == []
        assert await store.message_ids("k2") == [5]

    async def test_writes_from_many_tasks_at_once_all_land(self, store: Store) -> None:
        # The session writer, the escalator and an erasure request share one store in the bot. Calls made at
        # once may land in any order (a pool runs them on several connections), so each depends on none.
        await store.record_escalations([escalation("first")])
        await store.record_escalations([escalation(f"e{n}", user_key=f"k{n}") for n in range(40)])
        writes = []
        for n in range(40):
            writes += [
                store.save_sessions([session(f"k{n}")]),
                store.record_escalations([escalation(f"more{n}", user_key=f"k{n}", acked_by="kim")]),
                store.add_counts({("2026-11-29", "messages"): 1}),
                store.mark_alerted("first", float(n)),
                store.acknowledge(f"e{n}", "sam", 1.0),
            ]
        await asyncio.gather(*writes)
        assert all([await store.load_session(f"k{n}") for n in range(40)])
        assert len(await store.escalations()) == 81
        assert await store.unalerted() == [e for e in await store.escalations() if e.id != "first"]
        assert await store.counts("2026-11-29") == {"messages": 40}
        assert {e.acked_by for e in await store.escalations() if e.id != "first"} == {"sam", "kim"}
        assert all(e.acked_by == "sam" for e in await store.escalations() if e.id.startswith("e"))
