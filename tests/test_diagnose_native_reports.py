"""Reports written by native code and its runtimes: signal handlers, backtraces, kernel assertions, C++ loggers.

Each log is short and invented in the style of the program that writes such reports; the rules run alone (an
empty learned model) so that the checks show what the rules decide.
"""

from __future__ import annotations

from tools.logs.components import frame_component
from tools.logs.diagnose import Diagnosis, DiagnosisHints, diagnose_text
from tools.logs.frames import Frame
from tools.logs.learned import LearnedModel
from tools.logs.prefixes import split_line

NCCL_START = (
    "node-7:3100:3100 [0] NCCL INFO Bootstrap : Using eth0:10.1.0.7<0>\n"
    "node-7:3100:3180 [0] NCCL INFO comm 0x55d0 rank 0 nranks 4 cudaDev 0 busId 1a000 - Init START\n"
)


def rules_alone(text: str, hints: DiagnosisHints | None = None) -> Diagnosis:
    return diagnose_text(text, hints, model=LearnedModel())


def _open_mpi_report(library: str) -> str:
    return (
        "[node-7:03100] *** Process received signal ***\n"
        "[node-7:03100] Signal: Segmentation fault (11)\n"
        "[node-7:03100] Signal code: Address not mapped (1)\n"
        "[node-7:03100] Failing at address: 0x18\n"
        "[node-7:03100] [ 0] /lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f3a1c23c050]\n"
        f"[node-7:03100] [ 1] {library}(+0x5a1c4)[0x7f3a1d45a1c4]\n"
        f"[node-7:03100] [ 2] {library}(+0x4f0e2)[0x7f3a1d44f0e2]\n"
        "[node-7:03100] [ 3] /lib/x86_64-linux-gnu/libc.so.6(+0x89134)[0x7f3a1c289134]\n"
        "[node-7:03100] *** End of error message ***\n"
    )


def test_open_mpis_signal_report_is_a_crash_read_by_the_library_its_backtrace_names() -> None:
    inside_nccl = rules_alone(NCCL_START + _open_mpi_report("/usr/local/nccl/lib/libnccl.so.2"))
    assert inside_nccl.diagnosis_class == "nccl_error", inside_nccl.why
    assert inside_nccl.key_line == "[node-7:03100] *** Process received signal ***"
    assert inside_nccl.root_cause is not None and inside_nccl.root_cause.message == "Segmentation fault"
    elsewhere = rules_alone(_open_mpi_report("/opt/app/lib/libsolver.so.3"))
    assert elsewhere.diagnosis_class == "process_killed"  # a crash no component explains


def test_a_backtrace_in_the_debuggers_style_names_its_functions() -> None:
    report = (
        "==== backtrace (tid: 3181) ====\n"
        " 0 0x0000000000042520 __sigaction()  ???:0\n"
        " 1 0x000000000007e0d9 ncclTopoSearchRec()  /src/nccl/src/graph/search.cc:811\n"
        " 2 0x000000000005f4a2 ncclCommInitRankFunc()  /src/nccl/src/init.cc:1402\n"
        "=================================\n"
    )
    diagnosis = rules_alone(NCCL_START + report)
    assert diagnosis.diagnosis_class == "nccl_error", diagnosis.why
    assert diagnosis.root_cause is not None
    assert [frame.function for frame in diagnosis.root_cause.frames][:2] == ["__sigaction", "ncclTopoSearchRec"]


def test_the_plain_glog_prefix_and_open_mpis_tag_are_peeled() -> None:
    glog = split_line("E1104 08:01:02.512233 77120 ProcessGroupNCCL.cpp:1501] [Rank 2] Watchdog caught collective")
    assert (glog.text, glog.level) == ("[Rank 2] Watchdog caught collective", "ERROR")
    tagged = split_line("[gpu-node-12:004411] Signal: Bus error (7)")
    assert (tagged.text, tagged.origin) == ("Signal: Bus error (7)", "gpu-node-12:004411")
    timed = split_line("2026-03-01 09:10:11 [gpu-node-12:004411] *** Process received signal ***")
    assert timed.text == "*** Process received signal ***"
    assert split_line("[core.py:396] Engine started").text == "[core.py:396] Engine started"  # a source location


def _assertion(frames: list[tuple[str, str]]) -> str:
    listed = "".join(
        f'  File "/usr/lib/python3.12/site-packages/{path}", line 9, in {function}\n' for path, function in frames
    )
    return (
        "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
        "/pytorch/aten/src/ATen/native/cuda/ScatterGatherKernel.cu:144: operator(): block: [3,0,0], thread: [7,0,0]"
        ' Assertion `idx_dim >= 0 && idx_dim < index_size && "index out of bounds"` failed.\n'
        f"Traceback (most recent call last):\n{listed}"
        "RuntimeError: CUDA error: device-side assert triggered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call.\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
    )


def test_a_kernels_own_assertion_is_a_bug_in_its_input_not_the_gpus_generation() -> None:
    plain = rules_alone(_assertion([("vllm/v1/worker/gpu_model_runner.py", "execute_model")]))
    assert plain.diagnosis_class == "unknown" and plain.confidence >= 0.5, plain.why
    drafting = rules_alone(
        _assertion(
            [("vllm/v1/worker/gpu_model_runner.py", "propose_draft"), ("vllm/v1/spec_decode/eagle.py", "propose")]
        )
    )
    assert drafting.diagnosis_class == "spec_decode_problem", drafting.why


def test_an_operator_the_npus_operator_store_lacks_is_the_devices_generation() -> None:
    text = (
        "INFO 06-01 09:00:00 [model_runner.py:1] Loading model weights took 3.1 GB\n"
        "ERROR 06-01 09:00:09 [engine.py:4] EZ3002: [PID: 41] Optype [GatherV3] of Ops kernel [AIcoreEngine] is "
        "unsupported. Reason: op type GatherV3 is not found in this op store.\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "unsupported_arch", diagnosis.why
    assert diagnosis.key_line is not None and "GatherV3" in diagnosis.key_line


def test_kernels_built_for_another_npu_model_are_the_devices_generation() -> None:
    text = (
        "INFO 06-01 09:00:00 [worker.py:1] Loading model weights took 2.0 GB\n"
        "[ERROR] RUNTIME(4120,python3):2025-06-01-09:00:05 the socversion Ascend910B3 of bin package does not match "
        "the current device socversion Ascend310P1.\n"
    )
    assert rules_alone(text).diagnosis_class == "unsupported_arch"


def test_the_allocators_failed_nvml_assert_is_the_allocation_that_failed() -> None:
    text = (
        "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/site-packages/vllm/model_executor/model_loader/default_loader.py", line 9, in '
        "load_weights\n"
        'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "/pytorch/c10/cuda/CUDACachingAllocator.cpp":1131, '
        "please report a bug to PyTorch.\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "cuda_oom", diagnosis.why


def test_a_qualified_exception_class_in_lower_camel_case_is_an_exception_and_kv_transfer_is_not_nccl() -> None:
    text = (
        "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/vllm/vllm/distributed/kv_transfer/kv_connector/v1/mooncake_connector.py", line 90, in '
        "register_kv_caches\n"
        '  File "/usr/lib/python3.12/site-packages/mooncake/engine.py", line 12, in register_memory\n'
        "mooncake._bindings.transferEngineError: TRANSFER_ERR_REGISTER\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.type == "mooncake._bindings.transferEngineError"
    assert diagnosis.diagnosis_class == "unknown", diagnosis.why  # neither NCCL nor the cache's size


def test_vllms_model_executor_is_the_models_code_not_the_scheduler() -> None:
    model_code = Frame("/opt/vllm/vllm/model_executor/models/llama.py", 40, "forward")
    assert frame_component(model_code) == "model"
    executor = Frame("/opt/vllm/vllm/v1/executor/multiproc_executor.py", 90, "collective_rpc")
    assert frame_component(executor) == "scheduler"


def test_rocms_report_of_a_gpu_page_fault_is_a_native_crash() -> None:
    text = (
        "[2026-01-05|10:00:02|core|rank=0] INFO     prefill batch: 1 request, 16384 tokens\n"
        "Memory access fault by GPU node-3 (Agent handle: 0x55d1a0) on address 0x7f12a000. Reason: Page not present "
        "or supervisor privilege.\n"
        "GPU core dump failed\n"
        "[launcher] rank exit codes [-6, -6]\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "process_killed", diagnosis.why
    assert diagnosis.key_line.startswith("Memory access fault by GPU node-3")


def test_ucxs_handler_with_a_space_in_its_bracket_and_a_gpu_threads_assertion_are_native_reports() -> None:
    ucx = (
        "(RayWorkerWrapper pid=1062) [decoder-0:1062 :0:1062] Caught signal 11 (Segmentation fault: address not "
        "mapped to object at address (nil))\n"
        "(RayWorkerWrapper pid=1062) ==== backtrace (tid:   1062) ====\n"
        "(RayWorkerWrapper pid=1062)  0  /opt/hpcx/ucx/lib/libucs.so.0(ucs_handle_error+0x2e4) [0x7fb7980a2654]\n"
    )
    assert rules_alone(ucx).diagnosis_class == "process_killed"
    assertion = "".join(
        f"/env/lib/python3.12/site-packages/torch/_inductor/runtime/compile_tasks.py:45: <module>: block: [337,0,0], "
        f"thread: [{thread},0,0] Assertion `index out of bounds: 0 <= tmp10 < 4096` failed.\n"
        for thread in (112, 113, 114)
    )
    diagnosis = rules_alone(assertion)
    assert diagnosis.diagnosis_class == "unknown" and "assertion" in diagnosis.why, diagnosis.why


def test_a_native_backtrace_printed_before_the_fault_handlers_report_is_the_crashs_stack() -> None:
    def crash(function: str, path: str) -> str:
        return (
            "host:191:25036 [5] NCCL INFO ncclCommSplit comm 0x55b6d0b44010 rank 5 nranks 16 - Init COMPLETE\n"
            '[2025-02-25 06:55:22] INFO:     10.0.0.7:18498 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
            "==== backtrace (tid:  25645) ====\n"
            " 0 0x0000000000042520 __sigaction()  ???:0\n"
            f" 1 0x000000000006a920 {function}()  {path}:518\n"
            " 2 0x0000000000094ac3 pthread_condattr_setpshared()  ???:0\n"
            "=================================\n"
            "Fatal Python error: Segmentation fault\n"
        )

    # A crash inside NCCL's proxy thread is NCCL's (nccl_error); the same report in other code is a native crash.
    assert rules_alone(crash("ncclProxySaveOp", "/build/nccl/src/proxy.cc")).diagnosis_class == "nccl_error"
    # The NCCL lines before the backtrace are no part of it.
    assert rules_alone(crash("decode_block", "/build/codec/src/block.cc")).diagnosis_class == "process_killed"
