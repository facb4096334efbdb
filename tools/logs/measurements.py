"""What a log's own measurements say is wrong when no error is printed: a speculative acceptance too low to
gain anything, collectives that nccl-tests found delivering wrong values, and the result code an nccl-tests
process exited with.

nccl-tests check every result and count the wrong elements in each row (the ``#wrong`` columns, out of place
and in place); a run can print a row with wrong results and go on, with no error line until its summary (or
none, when the excerpt stops before it). A count above zero is data corrupted on the way: a bug in NCCL, the
driver or the fabric, which none of the classes names.
"""

from __future__ import annotations

import re

from tools.logs.evidence import Evidence
from tools.logs.signals import low_acceptance
from tools.logs.window import LogWindow

ACCEPTANCE_PRIORITY = 15
WRONG_RESULTS_PRIORITY = 60  # as the summary line's own report ("Out of bounds values : 2 FAILED")
# Every nccl-tests results header names the algorithm bandwidth: a literal search skips other logs at once.
_RESULTS_HEADER = "algbw"
# A row of the releases that count wrong elements: size, count, type, reduction (absent in tests without one), root,
# then time, algbw, busbw and #wrong out of place and in place (a launcher may label each line with its rank,
# " 0:      1048576 ...", or each piece the test printed, "[0]  1048576 ... -1[0]  1626.5 ..."; a pasted row may
# have lost its leading spaces).
_ROW = re.compile(
    r"^(?:\[\d+\])?(?: *\d+:)? *(?P<size>\d+) +\d+ +\w+ +(?:(?:sum|prod|min|max|avg|none) +)?-?\d+(?:\[\d+\] *| +)"
    r"[\d.]+ +[\d.]+ +[\d.]+ +(?P<out>\d+|N/A)(?:\[\d+\] *| +)[\d.]+ +[\d.]+ +[\d.]+ +(?P<in>\d+|N/A)\s*$"
)


# nccl-tests exits with its result code (src/common.h: testSuccess 0, testInternalError 1, testCudaError 2,
# testNcclError 3, ...); MPI's launcher reports the code of the first rank that failed ("Exit code:    3").
TEST_NCCL_ERROR = 3
TEST_RESULT_PRIORITY = 45  # below every signature that names the NCCL error itself
_LAUNCHER_EXIT = re.compile(r"^\s*Exit code:\s+(\d+)\s*$")


def acceptance_evidence(window: LogWindow) -> list[Evidence]:
    """Speculative decoding that accepts almost nothing, from the engine's own acceptance lines."""
    acceptance = low_acceptance(window)
    if acceptance is None:
        return []
    line, mean = acceptance
    return [
        Evidence(
            "acceptance",
            "spec_decode_problem",
            ACCEPTANCE_PRIORITY,
            0.6,
            line,
            f"mean accept length {mean:.2f} (1.0 means no gain)",
            ["check_draft_model", "disable_speculation"],
            f"Speculative decoding accepts almost nothing (mean accept length {mean:.2f}, 1.0 means no gain).",
        )
    ]


def wrong_results_evidence(window: LogWindow) -> list[Evidence]:
    """The first nccl-tests row that counted wrong elements, as a failure none of the classes names."""
    if _RESULTS_HEADER not in window.text:
        return []
    for index, line in enumerate(window.lines):
        row = _ROW.match(line)
        if row is None:
            continue
        wrong = [int(count) for count in (row.group("out"), row.group("in")) if count != "N/A"]
        if any(count > 0 for count in wrong):
            why = f"nccl-tests counted {max(wrong)} wrong elements in the {row.group('size')}-byte row"
            return [
                Evidence(
                    "measurement",
                    "unknown",
                    WRONG_RESULTS_PRIORITY,
                    0.6,
                    index,
                    why,
                    ["nccl_debug_info", "inspect_traceback"],
                    "A collective delivered wrong values (nccl-tests counted wrong elements): data corrupted by NCCL, "
                    "the driver or the fabric.",
                )
            ]
    return []


def nccl_tests_exit_evidence(window: LogWindow, exit_code: int | None) -> list[Evidence]:
    """An nccl-tests run (its results header in the window) whose process, or whose first failed rank as the MPI
    launcher reports it, exited with the tests' code for a failed NCCL call."""
    if _RESULTS_HEADER not in window.text:
        return []
    reported = [
        (index, int(match.group(1)))
        for index, line in enumerate(window.lines)
        if (match := _LAUNCHER_EXIT.match(line)) is not None
    ]
    index, code = reported[0] if reported else (len(window.lines) - 1, exit_code)
    if code != TEST_NCCL_ERROR:
        return []
    return [
        Evidence(
            "measurement",
            "nccl_error",
            TEST_RESULT_PRIORITY,
            0.7,
            index,
            f"an nccl-tests process exited with code {code}, the tests' code for a failed NCCL call",
            ["nccl_debug_info", "nccl_p2p_disable"],
            "An NCCL call of the collective test failed (nccl-tests' result code 3); its message is not in the log.",
        )
    ]
