"""Broker: request handlers, replica manager, partition state."""
