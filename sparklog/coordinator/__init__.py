"""The group coordinator: classic consumer groups and committed offsets over __consumer_offsets.

- :mod:`.records`: the key/value records of ``__consumer_offsets`` (Kafka's schemas).
- :mod:`.group_metadata`: the classic group state machine, pure and driven by an injected clock.
- :mod:`.offsets`: committed offsets of one group (commit validation, fetch, expiry).
- :mod:`.coordinator`: one state per ``__consumer_offsets`` partition we lead, rebuilt by
  replaying that partition; writes records through the replica manager before answering.
- :mod:`.apis`: the request handlers (FindCoordinator, JoinGroup, ... DeleteGroups).
"""
