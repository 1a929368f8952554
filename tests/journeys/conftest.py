"""Print how long each journey and each of its steps took, at the end of the test session."""

from tests.journeys.test_journeys import TIMINGS


def pytest_terminal_summary(terminalreporter):
    if TIMINGS:
        terminalreporter.section("journeys: time per journey and per step")
        for line in TIMINGS:
            terminalreporter.write_line(line)
