"""Adapters translate a platform's input and output to the engine's Incoming and Reply."""
