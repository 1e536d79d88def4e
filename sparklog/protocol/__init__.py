"""Kafka wire protocol, sans-IO.

Primitive types, message schemas declared as data, one codec, framing, error codes and record
batch v2. Nothing here touches a socket or an event loop.
"""
