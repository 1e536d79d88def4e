"""asyncio servers and clients: connection lifecycle, framing, back-pressure."""
