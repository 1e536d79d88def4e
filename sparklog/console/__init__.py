"""A read-only web console every broker can serve on its HTTP listener (opt-in with
``sparklog.console.enable=true``, beside ``/metrics`` on ``sparklog.metrics.listener``).

- :mod:`.data` gathers what a page shows, as a Kafka client of the cluster (blocking);
- :mod:`.pages` renders it as plain HTML (no script, no external resource);
- :mod:`.routes` maps URLs to pages and runs the gathering off the event loop.

The console builds on the client package (the admin client, the group helpers, the partition
reader), never on the broker's internals or the CLI: it sees what any client would, through the
node's own listener.
"""
