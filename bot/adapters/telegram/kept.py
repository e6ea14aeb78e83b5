"""What the journal keeps of an update until it is answered: what answering it needs, and nothing else.

Telegram sends each update with the sender's and the chat's names, username and language, forwarded and
quoted messages, file ids and coordinates. Answering reads much less (``people.py``, ``app.py``, ``lanes.py``):
who wrote (an id), in which chat (an id and its type), when, the words or caption, a command's entity, what
kind of attachment it was, a button's data. That is all the journal keeps, and it still parses as an
``Update`` for a replay after a crash. Names are left blank (PTB requires a first name), an attachment is kept
as an empty one of its kind (a location at 0,0, a contact without a number, any other as a document), and
only ``bot_command`` entities stay. The one exception is a tap in a group, which can only be an operator's
Acknowledge in the operators' chat: its alert's text and buttons, and the operator's username, are kept, so
acknowledging after a restart edits the alert as it would have.
"""

from __future__ import annotations

from typing import Any

from telegram import Chat, Contact, Location, MaybeInaccessibleMessage, Message, MessageEntity, Update, User, Venue
from telegram.constants import ChatType


def kept(update: Update) -> dict[str, Any]:
    """The update as the journal keeps it until answered."""
    found: dict[str, Any] = {"update_id": update.update_id}
    if update.message is not None:
        found["message"] = _message(update.message)
    elif update.edited_message is not None:
        found["edited_message"] = _message(update.edited_message)
    elif update.callback_query is not None:
        query = update.callback_query
        in_group = query.message is not None and query.message.chat.type != ChatType.PRIVATE
        tap: dict[str, Any] = {
            "id": query.id,
            "chat_instance": query.chat_instance,
            "from": _person(query.from_user, named=in_group),
        }
        if query.data is not None:
            tap["data"] = query.data
        if query.message is not None:
            tap["message"] = _shell(query.message)
            if in_group and isinstance(query.message, Message):
                alert = query.message.to_dict()
                tap["message"].update({key: alert[key] for key in ("text", "entities", "reply_markup") if key in alert})
        found["callback_query"] = tap
    return found


def _shell(message: MaybeInaccessibleMessage) -> dict[str, Any]:
    """A message's id, date and chat (its id and type): where a reply or an edit goes."""
    return {
        "message_id": message.message_id,
        "date": int(message.date.timestamp()),
        "chat": _chat(message.chat),
    }


def _message(message: Message) -> dict[str, Any]:
    found = _shell(message)
    if message.edit_date is not None:
        found["edit_date"] = int(message.edit_date.timestamp())
    if message.from_user is not None:
        found["from"] = _person(message.from_user)
    for key in ("text", "caption"):
        if getattr(message, key) is not None:
            found[key] = getattr(message, key)
    commands = [
        {"type": entity.type, "offset": entity.offset, "length": entity.length}
        for entity in message.entities
        if entity.type == MessageEntity.BOT_COMMAND
    ]
    if commands:
        found["entities"] = commands
    attachment = message.effective_attachment
    if isinstance(attachment, Location | Venue):
        found["location"] = {"latitude": 0.0, "longitude": 0.0}
    elif isinstance(attachment, Contact):
        found["contact"] = {"phone_number": "", "first_name": ""}
    elif attachment is not None:
        found["document"] = {"file_id": "", "file_unique_id": ""}
    return found


def _chat(chat: Chat) -> dict[str, Any]:
    return {"id": chat.id, "type": chat.type}


def _person(user: User, *, named: bool = False) -> dict[str, Any]:
    found: dict[str, Any] = {"id": user.id, "is_bot": user.is_bot, "first_name": ""}
    if named and user.username:
        found["username"] = user.username
    return found
