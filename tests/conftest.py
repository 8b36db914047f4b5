"""Test-suite set-up: differential testing of the cpu and c targets (tests/differential.py)."""
import differential

differential.install()


def pytest_terminal_summary(terminalreporter):
    if differential.ENABLED:
        programs = set(differential.compared)
        terminalreporter.write_line(f"differential: {len(differential.compared)} calls of {len(programs)} programs "
                                    f"gave the same bits on cpu and c")
