"""Which tests share an xdist worker: the real-engine directory as one unit, a file with a module-scoped fixture as
one unit, every other test alone."""

from __future__ import annotations

from pathlib import Path

from support.xdist_schedule import group_of

ROOT = Path(__file__).resolve().parents[1]


def test_the_real_engine_tests_share_one_worker() -> None:
    units = {
        group_of(f"tests/real_engine/{name}::test_x", ROOT)
        for name in ("test_baseline.py", "test_speculation.py", "test_failures.py", "test_agent_run.py")
    }
    assert units == {"tests/real_engine"}


def test_a_file_with_a_module_fixture_is_one_unit_and_other_tests_go_alone() -> None:
    assert group_of("tests/test_ssh_host.py::test_tool_calls_run_on_the_remote_host", ROOT) == "tests/test_ssh_host.py"
    assert group_of("tests/test_cli.py::test_help", ROOT) == "tests/test_cli.py::test_help"
    assert group_of("tests/test_cli.py::test_help[a::b]", ROOT) == "tests/test_cli.py::test_help[a::b]"


def test_the_files_it_reads_are_the_suites_own(tmp_path: Path) -> None:
    (tmp_path / "tests" / "deep").mkdir(parents=True)
    (tmp_path / "tests" / "conftest.py").write_text('@pytest.fixture(scope="session")\n')  # each worker its own
    (tmp_path / "tests" / "deep" / "conftest.py").write_text("@pytest.fixture(scope='session')\n")
    (tmp_path / "tests" / "test_plain.py").write_text("def test_a(): pass\n")
    assert group_of("tests/test_plain.py::test_a", tmp_path) == "tests/test_plain.py::test_a"
    assert group_of("tests/deep/test_b.py::test_b", tmp_path) == "tests/deep"
