"""Declarations of every message this node speaks; ``registry`` indexes them by API key."""
