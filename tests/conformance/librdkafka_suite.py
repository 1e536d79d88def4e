"""Run librdkafka's own integration tests (its ``tests/`` directory) against sparklog.

Contract:
- Needs a librdkafka source tree whose ``tests/test-runner`` is built (``./configure && make``
  in the tree, then ``make build`` in ``tests/``); ``--librdkafka DIR`` or ``$LIBRDKAFKA_DIR``
  (default ``/work/librdkafka``). Without one it says how to build it and exits 2. The sources
  are never part of this repository.
- ``--target single`` starts one combined node (tests/integration/node_harness.py);
  ``--target cluster`` starts 3 controllers + 3 brokers (cluster_harness.py). Both are stopped
  at the end, whatever happens.
- The broker tests are read from the ``tests[]`` table of ``tests/test.c``; each test number
  runs in its own ``test-runner`` process (``TESTS=NNNN``, ``-L``: no local-only tests, ``-Q``
  unless ``--full``) with a per-test time limit, so one hung test cannot stop the run.
- A test is excluded, with the reason printed, when it does not talk to a broker (librdkafka's
  TEST_F_LOCAL / TEST_F_MANUAL / mock-cluster tests), when librdkafka itself marks it a known
  issue, or when it needs something ``EXCLUDED`` names (Java tools, ZooKeeper, TLS/SASL
  listeners, a feature Kafka gates off). A test that skips itself counts as excluded with its
  own reason.
- Prints one line per test and closes with ``<target>: N passed, N failed, N excluded``; the
  exit status is 1 when any test failed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.integration.cluster_harness import Cluster  # noqa: E402
from tests.integration.node_harness import Node  # noqa: E402

DEFAULT_LIBRDKAFKA_DIR = "/work/librdkafka"
# bin/kafka-topics.sh running `sparklog topics` (sparklog's kafka-topics.sh).
KAFKA_PATH_SHIM = Path(__file__).resolve().parent / "kafka_path"
# The Kafka release whose behaviour sparklog follows; librdkafka gates tests on it.
BROKER_VERSION = "4.0.0"
PER_TEST_TIMEOUT_S = 900.0

SHARE = (
    "share groups (KIP-932) are off unless group.share.enable / the share.version feature "
    "turns them on, as in Kafka"
)

# Broker tests that cannot run against any plain PLAINTEXT Kafka 4.x broker set up as sparklog's
# harness sets one up, with the reason.
EXCLUDED: dict[str, str] = {
    "0097": "runs in librdkafka's SSL scenario only (trivup's CA and keys in test.conf); "
    "the harness serves PLAINTEXT",
    "0115": "needs a SASL scenario with ACLs denying the test principal (trivup)",
    "0119": "needs a SASL scenario with ACLs denying the test principal (trivup)",
    "0126": "needs an OAUTHBEARER/OIDC token endpoint (trivup)",
    "0135": "runs in librdkafka's SASL scenario only (trivup's JAAS users in test.conf)",
    "0142": "runs in librdkafka's SASL scenario only (KIP-368 re-authentication, trivup)",
    "0109": "its unauthorized-topic cases run Kafka's Java kafka-acls.sh (test_kafka_cmd)",
    "0170": SHARE,
    "0171": SHARE,
    "0172": SHARE,
    "0173": SHARE,
    "0174": SHARE,
    "0175": SHARE,
    "0176": SHARE,
    "0177": SHARE,
    "0178": SHARE,
    "0179": SHARE,
    "0180": SHARE,
    "0181": SHARE,
    "0184": SHARE,
    "0185": SHARE,
}

# Tests that need more brokers than one node has (librdkafka's default scenario is 3 brokers);
# they run against the cluster.
SINGLE_NODE_EXCLUDED: dict[str, str] = {
    "0103": "creates topics of replication factor 3: needs 3 brokers (runs against the cluster)",
}

# The broker settings librdkafka's suite expects of its trivup clusters (scenarios/default.json:
# auto-created topics of 4 partitions; Kafka's group.initial.rebalance.delay.ms of 3 s, which
# 0118 relies on to see its consumers join one generation), plus an authorizer that allows
# what no ACL denies, so the admin test's CreateAcls/DescribeAcls/DeleteAcls have one.
BROKER_OVERRIDES = {
    "auto.create.topics.enable": "true",
    "num.partitions": "4",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ROW = re.compile(r"^\|\s*(\d{4}\w*)\s*\|\s*(PASSED|FAILED|SKIPPED|RUNNING)\s*\|")
_SKIP = re.compile(r"SKIPPING TEST:\s*(.*)|Skipping test.*?:\s*(.*)", re.IGNORECASE)


@dataclass(frozen=True)
class SuiteTest:
    number: str
    names: tuple[str, ...]
    flags: tuple[str, ...]


@dataclass
class Outcome:
    number: str
    status: str  # passed | failed | excluded
    detail: str
    seconds: float = 0.0


def read_tests(tests_dir: Path) -> list[SuiteTest]:
    """Every test number in ``tests/test.c``'s table, its test names and their flags."""
    source = (tests_dir / "test.c").read_text()
    start = source.index("struct test tests[] = {")
    table = source[start : source.index("\n};", start)]
    by_number: dict[str, tuple[list[str], list[str]]] = {}
    for match in re.finditer(r"_TEST\(\s*(\w+),\s*([^,)]*)", table):
        name, flags = match.group(1), match.group(2)
        names, flag_list = by_number.setdefault(name[:4], ([], []))
        names.append(name)
        flag_list.append(flags.strip())
    return [
        SuiteTest(number, tuple(names), tuple(flags))
        for number, (names, flags) in sorted(by_number.items())
    ]


def exclusion(test: SuiteTest, target: str = "cluster") -> str | None:
    """Why ``test`` is not run against ``target`` (single | cluster), or None."""
    if test.number in EXCLUDED:
        return EXCLUDED[test.number]
    if target == "single" and test.number in SINGLE_NODE_EXCLUDED:
        return SINGLE_NODE_EXCLUDED[test.number]
    broker = [
        (name, flags)
        for name, flags in zip(test.names, test.flags, strict=True)
        if "TEST_F_LOCAL" not in flags and "TEST_F_MANUAL" not in flags
    ]
    if not broker or all("mock" in name for name, _ in broker):
        return "does not talk to a broker (librdkafka's local, manual or mock-cluster test)"
    if all("TEST_F_KNOWN_ISSUE" in flags and "WIN32" not in flags for _, flags in broker):
        return "librdkafka marks it TEST_F_KNOWN_ISSUE"
    return None


def run_one(
    tests_dir: Path,
    test: SuiteTest,
    conf: Path,
    bootstrap: str,
    log_dir: Path,
    full: bool,
    timeout_s: float,
) -> Outcome:
    env = dict(os.environ)
    env.update(
        {
            "TESTS": test.number,
            "TEST_KAFKA_VERSION": BROKER_VERSION,
            "RDKAFKA_TEST_CONF": str(conf),
            "LD_LIBRARY_PATH": f"{tests_dir.parent / 'src'}:{tests_dir.parent / 'src-cpp'}",
            # test_kafka_topics() runs $KAFKA_PATH/bin/kafka-topics.sh --bootstrap-server $BROKERS
            "KAFKA_PATH": str(KAFKA_PATH_SHIM),
            "BROKERS": bootstrap,
            "SPARKLOG_PYTHON": sys.executable,
        }
    )
    env.pop("CI", None)  # librdkafka's CI mode runs three tests at once
    args = [str(tests_dir / "test-runner"), "-L"]
    if not full:
        args.append("-Q")
    log_path = log_dir / f"{test.number}.log"
    started = time.monotonic()
    with log_path.open("wb") as log:
        try:
            done = subprocess.run(
                args,
                cwd=tests_dir,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                check=False,
            )
            returncode: int | None = done.returncode
        except subprocess.TimeoutExpired:
            returncode = None
    seconds = time.monotonic() - started
    text = _ANSI.sub("", log_path.read_bytes().decode(errors="replace"))
    if returncode is None:
        return Outcome(
            test.number, "failed", f"timed out after {timeout_s:.0f}s ({log_path})", seconds
        )
    if "TEST FAILED" in text or "FAILED" in _statuses(text) or returncode != 0:
        return Outcome(test.number, "failed", f"rc={returncode} ({log_path})", seconds)
    statuses = _statuses(text)
    if "PASSED" in statuses:
        return Outcome(test.number, "passed", "", seconds)
    skip = _SKIP.search(text)
    reason = (skip.group(1) or skip.group(2)).strip() if skip else "skipped by the test itself"
    return Outcome(test.number, "excluded", f"skips itself: {reason}", seconds)


def _statuses(text: str) -> set[str]:
    statuses: set[str] = set()
    for line in text.splitlines():
        row = _ROW.match(line)
        if row:
            statuses.add(row.group(2))
    if "Test " in text and " PASSED =====" in text:
        statuses.add("PASSED")
    if " FAILED =====" in text:
        statuses.add("FAILED")
    return statuses


@contextlib.contextmanager
def running_target(target: str, workdir: Path) -> Iterator[str]:
    """Start the target and yield its bootstrap servers; stop it at the end."""
    if target == "single":
        node = Node(workdir / "node", BROKER_OVERRIDES)
        node.start()
        try:
            yield node.bootstrap
        finally:
            node.stop()
        return
    cluster = Cluster(workdir / "cluster", controllers=3, brokers=3, overrides=BROKER_OVERRIDES)
    try:
        cluster.start()
        yield cluster.bootstrap_servers
    finally:
        cluster.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--librdkafka", default=os.environ.get("LIBRDKAFKA_DIR", DEFAULT_LIBRDKAFKA_DIR)
    )
    parser.add_argument("--target", choices=("single", "cluster"), default="single")
    parser.add_argument("--tests", default="", help="comma-separated test numbers (default all)")
    parser.add_argument("--full", action="store_true", help="without -Q (quick mode)")
    parser.add_argument("--timeout", type=float, default=PER_TEST_TIMEOUT_S)
    parser.add_argument("--workdir", default="", help="keep node logs and test logs here")
    args = parser.parse_args(argv)

    tests_dir = Path(args.librdkafka) / "tests"
    if not (tests_dir / "test-runner").exists():
        print(
            f"no built test-runner under {tests_dir}: in a librdkafka source tree run "
            "`./configure && make libs && make -C tests build` (apt: build-essential libssl-dev "
            "zlib1g-dev libzstd-dev liblz4-dev libsasl2-dev)",
            file=sys.stderr,
        )
        return 2
    wanted = {t.strip() for t in args.tests.split(",") if t.strip()}
    tests = [t for t in read_tests(tests_dir) if not wanted or t.number in wanted]
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="rdk-conf-"))
    workdir.mkdir(parents=True, exist_ok=True)
    log_dir = workdir / "logs"
    log_dir.mkdir(exist_ok=True)

    outcomes: list[Outcome] = []
    with running_target(args.target, workdir) as bootstrap:
        conf = workdir / "test.conf"
        conf.write_text(f"metadata.broker.list={bootstrap}\ntest.timeout.multiplier=4\n")
        for test in tests:
            reason = exclusion(test, args.target)
            if reason is not None:
                outcome = Outcome(test.number, "excluded", reason)
            else:
                outcome = run_one(
                    tests_dir, test, conf, bootstrap, log_dir, args.full, args.timeout
                )
            outcomes.append(outcome)
            names = ",".join(test.names)
            print(
                f"{outcome.status.upper():8} {names} {outcome.seconds:6.1f}s {outcome.detail}",
                flush=True,
            )
    counts = {s: sum(o.status == s for o in outcomes) for s in ("passed", "failed", "excluded")}
    print(
        f"librdkafka {args.target}: {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['excluded']} excluded"
    )
    if not args.workdir and counts["failed"] == 0:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
