"""What the bot says on Telegram about itself; first lines stay neutral, because a lock screen shows them."""

from __future__ import annotations

from bot import resources

WELCOME = (
    "Hello, and welcome.\n\n"
    "I'm Unhooked, an automated bot: not a person, not a therapist and not a crisis service. "
    "I answer with passages quoted from one article about trauma bonding and recovering from a hurtful "
    "relationship. Write what's on your mind in your own words, or pick a topic below.\n\n"
    "I keep no message text, only a coded key instead of your Telegram id and which passages you've seen: "
    "/privacy says more, /forget deletes it.\n\n"
    "If you are in danger or thinking about suicide, /crisis shows who you can call or text, any time."
)

HELP = (
    "Here is how this works.\n\n"
    "Write what's on your mind in your own words, for example: why do I miss him if it was so bad. "
    "I answer with a passage from the article and suggest topics to go on with.\n\n"
    "/topics: pick a topic\n"
    "/crisis: who to call or text if you are in danger or thinking about suicide\n"
    "/privacy: what I keep and for how long\n"
    "/forget: delete everything I keep about you\n"
    "/erase: delete our messages of the last 48 hours from this chat\n"
    "/help: this message"
)

TOPICS = "Here are the topics. Tap one, or write in your own words."
NO_TOPICS = "I can't reach my reading material right now. Please try again a little later, or write in your own words."

CRISIS = (
    "Here is who you can reach, any time.\n\n"
    f"{resources.EMERGENCY.capitalize()}.\n"
    f"Thoughts of suicide: {resources.LIFELINE}.\n"
    f"{resources.LIFELINE_ES}.\n"
    f"Danger from a partner: {resources.DV_HOTLINE}, when it is safe for you.\n\n"
    f"{resources.OUTSIDE_US}\n\n"
    f"{resources.AUTOMATED}"
)

PRIVACY = (
    "What I keep, and for how long.\n\n"
    "• A coded key (a keyed hash) instead of your Telegram id, with which passages you have seen and your "
    "last topic, so I don't repeat myself. Kept until you use /forget.\n"
    "• Your messages: the text of each one is kept only until I have answered it, usually less than a second, "
    "so nothing is lost if I restart. Then only its number stays, for 48 hours, so I never answer twice.\n"
    "• The numbers (not the text) of our messages of the last 48 hours, so that /erase can delete them.\n"
    "• If a message shows signs of a crisis: a record for the people who run me, with the time, the kind of "
    "crisis and your coded key, not your words. They can't see this chat, your name or your number, "
    "and they can't send help.\n"
    "• Daily totals, with nothing about who sent what.\n\n"
    "Telegram itself keeps this chat on its servers and on your devices until it is deleted there. "
    "/erase deletes our messages of the last 48 hours; \u201cDelete chat\u201d in Telegram removes the rest.\n"
    "/forget deletes everything I keep about you."
)

FORGET_ASK = (
    "Delete what I keep about you?\n\n"
    "That is your coded key, the passages you've seen, any crisis records and the message numbers kept "
    "for /erase. It can't be undone, and if you write again I start afresh."
)
FORGET_YES = "Yes, delete it"
FORGET_NO = "No, keep it"
FORGET_KEPT = "All right, nothing was deleted."
FORGET_FAILED = (
    "Sorry, I couldn't delete it just now: my storage isn't answering. Nothing was deleted. "
    "Please try /forget again in a little while."
)


def forget_done(records: int) -> str:
    """The honest answer after /forget: what went, and what Telegram still keeps."""
    what = "1 record" if records == 1 else f"{records} records"
    return (
        f"Done. I deleted everything I kept about you ({what}).\n\n"
        "Telegram still keeps this chat on its servers and your devices: /erase deletes our messages of "
        "the last 48 hours, and \u201cDelete chat\u201d in Telegram removes the rest."
    )


def erase_done(deleted: int, failed: int) -> str:
    """The honest answer after /erase: how many went, and what could not be deleted."""
    lines = [f"Done. I deleted {deleted} message{'s' if deleted != 1 else ''} from this chat."]
    if failed:
        lines.append(
            f"{failed} could not be deleted: Telegram lets a bot delete messages for 48 hours only, "
            "and some may already have been gone."
        )
    lines.append(
        "Messages older than 48 hours, and this one, stay until you use \u201cDelete chat\u201d in Telegram. "
        "This does not delete what I keep about you: /forget does that."
    )
    return "\n\n".join(lines)


NON_TEXT = (
    "I can only read text. Could you write it in words? "
    "If you need help right now, /crisis shows who you can call or text."
)
NO_LOCATION = (
    "I can't use locations or contacts, and I don't keep them. Please write in words instead. "
    "If you are in danger, /crisis shows who you can call or text."
)
GROUP = "Hello. I only talk in private chats: open a chat with me and press Start."
DESCRIPTION = (
    "A quiet place to read and talk things through, any time. Press Start to begin; "
    "/privacy says what is kept and /forget deletes it."
)
"""The "What can this bot do?" screen before Start: neutral, as someone glancing at a shared phone may read it."""
SHORT_DESCRIPTION = "A quiet place to read and talk things through."
"""The line on the bot's profile and in shared links."""
ACKNOWLEDGE = "Acknowledge"
