"""Every Telegram path (typed, edited, in a group, forwarded) goes through the engine's one crisis screen."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.fake_bot_api import FakeBotApi
from tests.telegram_harness import telegram_bot

ALICE, BOB = 1001, 1002
GROUP = -1009876543210

MODERATOR_RULE = """
patterns:
  - id: local.moved_the_boat
    category: partner_danger
    level: crisis
    phrase: he took the boat keys and locked us in
    examples:
      - he took the boat keys and locked us in
"""
WORDS = "he took the boat keys and locked us in"


def _content(mini_content: Callable[..., Path]) -> Path:
    return mini_content({"safety/patterns.yml": MODERATOR_RULE})


async def test_an_edit_is_screened_with_the_moderators_rules(
    api: FakeBotApi, tmp_path: Path, mini_content: Callable[..., Path]
) -> None:
    async with telegram_bot(api, tmp_path, content_dir=_content(mini_content)) as tg:
        api.send(ALICE, "hello")
        await tg.settle()
        api.edit(ALICE, 1, WORDS)
        await tg.settle()
        reply = api.sent(ALICE)[-1]
        assert "1-800-799-7233" in reply.text
        [escalation] = await tg.store.escalations()
        assert escalation.rule == "local.moved_the_boat"


async def test_a_group_message_is_screened_with_the_moderators_rules(
    api: FakeBotApi, tmp_path: Path, mini_content: Callable[..., Path]
) -> None:
    async with telegram_bot(api, tmp_path, content_dir=_content(mini_content)) as tg:
        api.send(BOB, WORDS, chat_id=GROUP)
        await tg.settle()
        [card] = api.sent(GROUP)
        assert card.text.startswith("Here is who you can reach, any time.") and WORDS not in card.text
        assert await tg.store.escalations() == []


async def test_a_forwarded_message_is_screened_like_any_other(
    api: FakeBotApi, tmp_path: Path, mini_content: Callable[..., Path]
) -> None:
    async with telegram_bot(api, tmp_path, content_dir=_content(mini_content)) as tg:
        origin = {"type": "hidden_user", "sender_user_name": "someone", "date": api.now()}
        api.send(ALICE, WORDS, forward_origin=origin)
        await tg.settle()
        assert "1-800-799-7233" in api.sent(ALICE)[-1].text
        [escalation] = await tg.store.escalations()
        assert escalation.rule == "local.moved_the_boat"
