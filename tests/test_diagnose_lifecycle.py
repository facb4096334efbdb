"""How an engine ended, in the diagnosis: the supervisor's last line, the kernel's OOM-killer lines, an orderly
stop, and the lines around a death after ready (real vLLM logs from tests/data/real_vllm)."""

from __future__ import annotations

from pathlib import Path

from tools.hosts.supervise import LOG_PREFIX
from tools.logs.diagnose import DiagnosisHints, diagnose_text
from tools.logs.kernel import log_pids, oom_kill_lines

REAL = Path(__file__).resolve().parent / "data" / "real_vllm"


def real(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def test_the_supervisors_last_line_tells_how_the_process_ended() -> None:
    stopped = diagnose_text(real("graceful-stop-sigterm.log") + f"\n{LOG_PREFIX} process 4242 exited with code 0\n")
    assert (stopped.diagnosis_class, stopped.exit_code) == ("stopped", 0)
    died = diagnose_text(real("worker-sigkill-after-ready.log") + f"\n{LOG_PREFIX} process 4242 exited with code 0\n")
    assert died.diagnosis_class == "process_killed" and died.findings == ["died_after_ready"]
    assert died.key_line is not None and "died unexpectedly" in died.key_line
    assert any("died unexpectedly" in line for line in died.lines_around)
    assert any("EngineCore encountered a fatal error" in line for line in died.lines_around)
    killed = diagnose_text(real("healthy-start.log") + f"\n{LOG_PREFIX} process 4242 killed by SIGKILL (9)\n")
    assert (killed.diagnosis_class, killed.exit_code) == ("process_killed", -9)


def test_a_log_that_stops_after_ready_is_healthy_only_while_the_process_lives() -> None:
    log = real("healthy-start.log")
    assert diagnose_text(log).diagnosis_class == "healthy"
    exited = diagnose_text(log, DiagnosisHints(exit_code=0, process_alive=False))
    assert exited.diagnosis_class != "healthy" and exited.findings == ["died_after_ready"]
    assert exited.lines_around  # the last lines before the log ended


def test_the_oom_killers_lines_about_the_engine_decide_process_killed() -> None:
    log = real("api-server-sigkill-after-ready.log")
    pids = log_pids(log)
    worker = max(pids)
    kernel = "\n".join(
        [
            "[ 7625.950034] opvdf7a131: left allmulticast mode",
            f"[ 7712.101010] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),task=VLLM::Worker,pid={worker},uid=0",
            f"[ 7712.101020] Out of memory: Killed process {worker} (VLLM::Worker) total-vm:9000000kB",
            "[ 7712.101030] Out of memory: Killed process 99999999 (someone-else) total-vm:1kB",
        ]
    )
    lines = oom_kill_lines(kernel, pids)
    assert len(lines) == 2 and all(str(worker) in line for line in lines)
    diagnosis = diagnose_text(log, DiagnosisHints(exit_code=0, process_alive=False, kernel_lines=lines))
    assert diagnosis.diagnosis_class == "process_killed"
    assert "OOM killer" in diagnosis.summary
    assert any(line.startswith("kernel: ") and str(worker) in line for line in diagnosis.evidence)
