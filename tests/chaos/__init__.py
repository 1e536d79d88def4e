"""A Jepsen-style chaos test for sparklog: real processes, real clients, a seeded nemesis.

``runner`` (the 3+3 cluster), ``faults`` (the nemesis), ``workload`` (the clients), ``history``
(the JSONL log of operations), ``drain`` (the final state), ``checker`` (the verdict), ``probes``
(read-only cluster questions), ``cli`` (``python -m tests.chaos``).
"""
