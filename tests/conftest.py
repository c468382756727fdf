import os
import sys
from pathlib import Path

# tests/ holds shared support modules (crawlcheck); make them importable from tests/mpi/ too.
sys.path.insert(0, str(Path(__file__).parent))

# every crawl the tests start sends its rank to the test web (abc_crawler.config.TEST_RANK_HEADER_ENV),
# also the README's and make demo's commands run verbatim: the access-log checks attribute requests
os.environ["ABC_TEST_RANK_HEADER"] = "1"


# -- skips: a failure where everything must run (CI), a summary line everywhere else ---------------
#: set to 1 (.ci/run does) and any skipped test fails with its reason: a whole area cannot pass by
#: being skipped (no unshare, no openssl, no compiled extension, no browser)
REQUIRE_ALL_ENV = "ABC_REQUIRE_ALL"
_skipped: list[tuple[str, str]] = []


def _skip_reason(report) -> str:
    lr = report.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        return str(lr[2]).removeprefix("Skipped: ")
    return str(lr)


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append((report.nodeid, _skip_reason(report)))


import pytest  # noqa: E402


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get(REQUIRE_ALL_ENV) == "1" and not hasattr(report, "wasxfail"):
        reason = _skip_reason(report)
        report.outcome = "failed"
        report.longrepr = f"skipped, but {REQUIRE_ALL_ENV}=1 requires every test to run: {reason}"


def pytest_terminal_summary(terminalreporter):
    if _skipped and os.environ.get(REQUIRE_ALL_ENV) != "1":
        reasons = sorted({why for _, why in _skipped})
        terminalreporter.write_line(f"abc tests: {len(_skipped)} skipped (set {REQUIRE_ALL_ENV}=1 to make a skip fail): "
                                    + "; ".join(reasons))


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if report.skipped:
        reason = _skip_reason(report)
        if os.environ.get(REQUIRE_ALL_ENV) == "1":
            report.outcome = "failed"
            report.longrepr = f"skipped, but {REQUIRE_ALL_ENV}=1 requires every test to run: {reason}"
        else:
            _skipped.append((report.nodeid, reason))
