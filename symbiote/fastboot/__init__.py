"""Answering a client sooner after a start; nothing below this package imports it."""
