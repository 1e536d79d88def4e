"""Metadata image, delta and loader shared by broker and controller."""
