"""Metadata plane at scale: 10,000 partitions through the QuorumController, snapshots, catch-up.

Run: ``.venv/bin/python tests/bench/bench_metadata.py [--partitions N] [--per-topic P]
[--topics-per-request T] [--rf R] [--brokers B]``. Not collected by pytest (file name
``bench_*.py``); it asserts only correctness (images agree by digest), never timings, and
prints one line per figure.

Everything runs in this process on real files (``tests/unit/metadata/snapshot_harness.py``): a
single-voter KRaft quorum (RaftReplica over the storage log, fsyncs included) with the
QuorumController and a MetadataLoader, and observers (brokers) joining over an in-memory
transport. Times are wall-clock ``perf_counter`` of the work, the simulated raft clock
aside. Figures:

  create            N partitions (RF R over B brokers) with CreateTopics requests of T topics,
                    each appended, committed and applied before the next
  log size          bytes of ``__cluster_metadata`` after the creation
  catch-up (log)    a new broker replaying the whole log with Fetch
  snapshot write    image -> records -> snapshot file (fsync + rename)
  snapshot size     bytes of the ``.checkpoint`` file
  snapshot load     a restarted controller node: open log, load snapshot into controller and
                    loader images, replay the log above it
  catch-up (snap)   a new broker behind the log start: FetchSnapshot + load + Fetch the rest
  rss               peak resident set size of this process (controller, brokers, images)
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sparklog.metadata.snapshot_generator import raft_snapshot_emitter
from tests.unit.metadata.snapshot_harness import MetaCluster


def _dir_bytes(directory: str, suffix: str) -> int:
    return sum(
        os.path.getsize(os.path.join(directory, n))
        for n in os.listdir(directory)
        if n.endswith(suffix)
    )


def _line(name: str, value: str) -> None:
    print(f"{name:<18} {value}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--per-topic", type=int, default=100)
    parser.add_argument("--topics-per-request", type=int, default=10)
    parser.add_argument("--rf", type=int, default=3)
    parser.add_argument("--brokers", type=int, default=6)
    args = parser.parse_args(argv)
    topics = max(1, args.partitions // args.per_topic)
    with tempfile.TemporaryDirectory(prefix="bench-metadata-") as tmp:
        root = Path(tmp)
        cluster = MetaCluster(root, voters=1)
        cluster.bootstrap(brokers=args.brokers)
        started = time.perf_counter()
        for first in range(0, topics, args.topics_per_request):
            names = [
                f"topic-{i}" for i in range(first, min(topics, first + args.topics_per_request))
            ]
            results = cluster.create_topics(names, args.per_topic, args.rf)
            assert all(r["error_code"] == 0 for r in results), results[:1]
        elapsed = time.perf_counter() - started
        leader = cluster.leader()
        partitions = sum(len(t.partitions) for t in leader.loader.image.topics.by_id.values())
        assert partitions == topics * args.per_topic
        _line(
            "create",
            f"{partitions} partitions in {topics} topics: {elapsed:.2f} s "
            f"({partitions / elapsed:,.0f} partitions/s)",
        )
        directory = leader.log.directory
        _line("log size", f"{_dir_bytes(directory, '.log') / 1e6:.2f} MB")

        started = time.perf_counter()
        cluster.start(2)
        cluster.settle()
        elapsed = time.perf_counter() - started
        digest = leader.loader.image.digest()
        assert cluster.nodes[2].loader.image.digest() == digest
        _line("catch-up (log)", f"{elapsed:.2f} s for a new broker replaying the log")

        started = time.perf_counter()
        raft_snapshot_emitter(leader.replica)(leader.loader.image)
        elapsed = time.perf_counter() - started
        snapshot_id = leader.replica.latest_snapshot_id
        assert snapshot_id is not None
        _line("snapshot write", f"{elapsed:.2f} s at offset {snapshot_id.end_offset}")
        size = leader.snapshots.size(snapshot_id)
        _line("snapshot size", f"{size / 1e6:.2f} MB")
        cluster.create_topics(["after-snapshot"], 1, 1)
        digest = leader.loader.image.digest()

        cluster.stop(1)
        started = time.perf_counter()
        restarted = cluster.start(1)
        elapsed = time.perf_counter() - started
        cluster.settle()
        assert restarted.loader.snapshots_loaded == 1
        assert restarted.loader.image.digest() == digest
        assert restarted.controller is not None and restarted.controller.image.digest() == digest
        _line("snapshot load", f"{elapsed:.2f} s (restart: snapshot into 2 images + log replay)")

        started = time.perf_counter()
        broker = cluster.start(3)
        cluster.settle()
        elapsed = time.perf_counter() - started
        assert broker.loader.snapshots_loaded == 1 and broker.loader.image.digest() == digest
        _line("catch-up (snap)", f"{elapsed:.2f} s for a new broker via FetchSnapshot")
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        _line("rss", f"{peak_kib / 1024:.0f} MiB peak (this process: controller + 3 replicas)")
        cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
