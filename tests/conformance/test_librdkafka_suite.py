"""The librdkafka conformance driver: its parsing of librdkafka's test table and output (always),
and a fast subset of librdkafka's own tests against one node (when a built librdkafka tree is
there: ``$LIBRDKAFKA_DIR``, default /work/librdkafka; CI machines have none, so it skips)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conformance import librdkafka_suite as suite

TABLE = """
struct test tests[] = {
    _TEST(0001_multiobj, 0),
    _TEST(0004_conf, TEST_F_LOCAL),
    _TEST(0022_consume_batch, 0),
    _TEST(0022_consume_batch_local, TEST_F_LOCAL),
    _TEST(0028_long_topicnames,
          TEST_F_KNOWN_ISSUE,
          TEST_BRKVER(0, 9, 0, 0)),
    _TEST(0055_producer_latency, TEST_F_KNOWN_ISSUE_WIN32),
    _TEST(0097_ssl_verify, 0),
    _TEST(0139_offset_validation_mock, 0),
    _TEST(8000_idle, TEST_F_MANUAL),
};
"""

# The subset run when librdkafka is built: produce/consume, offsets, ApiVersions and tests
# whose failures the suite found (compacted-topic record errors, unknown-topic commits,
# kafka-topics.sh-created topics, compaction). About a minute on a loaded 2-core machine.
FAST_SUBSET = ("0001", "0011", "0012", "0030", "0035", "0052", "0077")


def test_read_tests_groups_names_by_number_with_their_flags(tmp_path: Path) -> None:
    (tmp_path / "test.c").write_text(TABLE)
    tests = {t.number: t for t in suite.read_tests(tmp_path)}
    assert tests["0022"].names == ("0022_consume_batch", "0022_consume_batch_local")
    assert tests["0022"].flags == ("0", "TEST_F_LOCAL")
    assert tests["0028"].flags == ("TEST_F_KNOWN_ISSUE",)
    reasons = {number: suite.exclusion(test) for number, test in tests.items()}
    assert reasons["0001"] is None and reasons["0022"] is None
    assert reasons["0055"] is None  # a known issue on Windows only
    assert "broker" in str(reasons["0004"]) and "broker" in str(reasons["8000"])
    assert "mock" in str(reasons["0139"])
    assert "KNOWN_ISSUE" in str(reasons["0028"])
    assert "SSL" in str(reasons["0097"])


def test_output_parsing_tells_passed_failed_and_skipped() -> None:
    passed = "| 0001_multiobj                            |     PASSED |   1.083s |"
    failed = "| 0030_offset_commit                       |     FAILED |   1.8s |"
    skipped = "| 0126_oauthbearer_oidc                    |    SKIPPED |   0.0s |"
    assert suite._statuses(passed) == {"PASSED"}
    assert suite._statuses(failed) == {"FAILED"}
    assert suite._statuses(skipped) == {"SKIPPED"}
    assert suite._SKIP.search("[0126 / 0.0s] SKIPPING TEST: needs OIDC") is not None


def _tests_dir() -> Path:
    return Path(os.environ.get("LIBRDKAFKA_DIR", suite.DEFAULT_LIBRDKAFKA_DIR)) / "tests"


@pytest.mark.integration
@pytest.mark.skipif(
    not (_tests_dir() / "test-runner").exists(),
    reason="no built librdkafka tests/test-runner (LIBRDKAFKA_DIR); the full run is by hand",
)
def test_librdkafka_fast_subset_passes_against_one_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = suite.main(
        [
            "--target",
            "single",
            "--tests",
            ",".join(FAST_SUBSET),
            "--workdir",
            str(tmp_path),
            "--timeout",
            "300",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{len(FAST_SUBSET)} passed, 0 failed, 0 excluded" in out, out
