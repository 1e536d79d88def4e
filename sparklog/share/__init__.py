"""KIP-932 share groups, sans-IO: the share-partition state kept by a partition leader, the
classification of fetched batches, and the share-group membership and assignment kept by the
group coordinator. Nothing here imports asyncio or sockets; the broker drives it with the
records it reads, the acknowledgements it receives and the clock."""
