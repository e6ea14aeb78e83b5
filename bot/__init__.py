"""Unhooked: a support chatbot for people recovering from a trauma bond."""

__version__ = "0.1.0"
