"""Accelerators other than NVIDIA's in their runtimes' own words: Ascend's CANN operator store, Intel's Level Zero
runtime (XPU) and Rebellions' NPU runtime. Each log is short and invented in the style of the engine's plugin for that
device; the rules run alone (an empty learned model) so that the checks show what the rules decide.
"""

from __future__ import annotations

from tools.logs.diagnose import Diagnosis, diagnose_text
from tools.logs.learned import LearnedModel

WORKER = "(Worker_TP0 pid=4410) ERROR 11-02 09:14:07 [multiproc_executor.py:611] "


def rules_alone(text: str) -> Diagnosis:
    return diagnose_text(text, model=LearnedModel())


def test_an_operator_the_kernel_build_of_this_soc_lacks_is_an_unsupported_device() -> None:
    text = (
        f"{WORKER}Traceback (most recent call last):\n"
        f'{WORKER}  File "/env/lib/python3.11/site-packages/vllm_ascend/ops/rotary_embedding.py", line 88, in forward\n'
        f"{WORKER}    return torch_npu.npu_apply_rotary_pos_emb(query, key, cos, sin)\n"
        f"{WORKER}RuntimeError: call aclnnApplyRotaryPosEmb failed, detail:EZ1001: [PID: 4410] 2026-11-02-09:14:07 "
        "Get regInfo failed, The binary_info_config.json of socVersion [ascend310b] does not support opType "
        "[ApplyRotaryPosEmb].\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "unsupported_arch", diagnosis.why
    assert "rebuild_for_arch" in [remedy.id for remedy in diagnosis.remedies]


def test_intels_runtime_losing_the_device_is_a_hardware_fault_and_its_memory_shortfall_an_oom() -> None:
    lost = (
        f"{WORKER}Traceback (most recent call last):\n"
        f'{WORKER}  File "/env/lib/python3.12/site-packages/vllm/v1/worker/xpu_worker.py", line 96, in execute_model\n'
        f"{WORKER}    torch.xpu.synchronize()\n"
        f"{WORKER}RuntimeError: level_zero backend failed with error: 20 (UR_RESULT_ERROR_DEVICE_LOST)\n"
    )
    diagnosis = rules_alone(lost)
    assert diagnosis.diagnosis_class == "gpu_hardware_fault", diagnosis.why
    assert diagnosis.raw_confidence < 0.9  # Intel's drivers have also reported exhausted memory this way
    short = lost.replace("20 (UR_RESULT_ERROR_DEVICE_LOST)", "39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)")
    assert rules_alone(short).diagnosis_class == "cuda_oom"


def test_an_operator_that_rejects_the_parameters_it_was_given_is_a_setting_it_does_not_take() -> None:
    text = (
        "(EngineCore_DP0 pid=512) ERROR 11-20 14:02:11 [core.py:866] EngineCore failed to start.\n"
        "(EngineCore_DP0 pid=512) ERROR 11-20 14:02:11 [core.py:866] RuntimeError: call aclnnGroupedMatmulV4 failed:\n"
        "AclNN_Parameter_Error(EZ1001): Tensor antiquantScale not implemented for DT_FLOAT16, should be in dtype "
        "support list [DT_BFLOAT16, DT_FLOAT].\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "config_error", diagnosis.why
    assert diagnosis.remedies[0].id == "check_flags"


def test_a_kernel_that_faults_on_the_npu_is_a_failure_no_class_names_and_a_lost_heartbeat_is_not_one() -> None:
    text = (
        f"{WORKER}Traceback (most recent call last):\n"
        f'{WORKER}  File "/env/lib/python3.11/site-packages/vllm_ascend/worker/model_runner_v1.py", line 1630, in '
        "execute_model\n"
        f"{WORKER}    torch.npu.synchronize()\n"
        f"{WORKER}RuntimeError: ACL stream synchronize failed, error code:507015\n"
    )
    diagnosis = rules_alone(text)
    assert (diagnosis.diagnosis_class, diagnosis.signature) == ("unknown", "npu-kernel-fault"), diagnosis.why
    assert diagnosis.raw_confidence >= 0.5  # said, not left for a guess: a bug in a kernel or in the engine
    lost = text.replace("error code:507015", "error code:507010")  # the device's lost heartbeat: the hardware's
    assert rules_alone(lost).signature != "npu-kernel-fault"


def test_the_first_replay_of_a_captured_ascend_graph_is_a_request_being_served() -> None:
    captured = (
        "(Worker_DP0_TP0 pid=336) INFO 06-05 17:29:10 [model_runner_v1.py:2100] Graph capturing finished in 41 secs\n"
        "(EngineCore_DP0 pid=300) INFO 06-05 17:29:11 [core.py:210] init engine (profile, create kv cache, warmup "
        "model) took 95.2 seconds\n"
    )
    assert rules_alone(captured).diagnosis_class == "loading"
    replayed = captured + "(Worker_DP0_TP0 pid=336) INFO 06-05 17:30:56 [acl_graph.py:196] Replaying aclgraph\n"
    diagnosis = rules_alone(replayed)
    assert diagnosis.diagnosis_class == "healthy", diagnosis.why


def test_a_kernel_that_requires_another_amd_generation_is_unsupported_arch() -> None:
    text = (
        f"{WORKER}Traceback (most recent call last):\n"
        f'{WORKER}  File "/env/lib/python3.12/site-packages/vllm/v1/attention/backends/mla/rocm_aiter_mla.py", '
        "line 140, in forward_decode\n"
        f'{WORKER}    assert arch == "gfx950", f"fp8 mla decode requires gfx950 (CDNA4), got {{arch}}"\n'
        f"{WORKER}AssertionError: fp8 mla decode requires gfx950 (CDNA4), got gfx90a\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "unsupported_arch", diagnosis.why


def test_hccl_waiting_in_vain_for_a_peer_is_a_failed_collective_whatever_line_shows_it() -> None:
    # HCCL's error codes (EIxxxx) name collective failures; a notify wait that times out is a peer that never sent.
    notify = (
        f"{WORKER}[ERROR] 2026-11-02-09:14:07 (PID:4410, Device:0, RankID:3) ERR00100 PTA call acl api failed.\n"
        f"{WORKER}EI0002: [PID: 4410] 2026-11-02-09:14:07.101.202 The wait execution of the Notify register times "
        "out. Reason: The Notify register has not received the Notify record from remote rank: [5].\n"
    )
    diagnosis = rules_alone(notify)
    assert diagnosis.diagnosis_class == "nccl_error", diagnosis.why
    # The device synchronisation that gave up on that wait (ACL 507048, a task that timed out) says the same alone.
    timed_out = (
        f"{WORKER}RuntimeError: npuSynchronizeDevice:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:479 NPU "
        "function error: AclrtSynchronizeDeviceWithTimeout, error code is 507048\n"
        f"{WORKER}[Error]: The execution of the internal task times out.\n"
    )
    diagnosis = rules_alone(timed_out)
    assert diagnosis.diagnosis_class == "nccl_error", diagnosis.why
    # torch_npu's "error code is N" is the same ACL code as "error code:N": a kernel fault either way.
    fault = timed_out.replace("507048", "507015").split(f"{WORKER}[Error]")[0]
    assert rules_alone(fault).signature == "npu-kernel-fault"


def test_an_npu_operator_failing_inside_its_own_checks_is_a_failure_no_class_names() -> None:
    text = (
        f"{WORKER}RuntimeError: npu_moe_gating_top_k:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:48 NPU function "
        "error: call aclnnMoeGatingTopK failed, error code is 561002\n"
        f"{WORKER}EZ9999: Inner Error!\n"
        f"{WORKER}EZ9999: [PID: 4410] 2026-11-02-09:14:07.101.202 expert count is: 64, but currently only support "
        "256.[FUNC:CheckInputShape][FILE:moe_gating_top_k_tiling.cpp][LINE:166]\n"
    )
    diagnosis = rules_alone(text)
    assert (diagnosis.diagnosis_class, diagnosis.signature) == ("unknown", "npu-operator-failed"), diagnosis.why
    assert diagnosis.raw_confidence >= 0.5  # said, not left to the learned model's guess


def test_an_operator_failing_in_the_dummy_sampler_run_after_loading_is_the_warm_up() -> None:
    """The plugin's model runner runs the sampler once on dummy data after the weights load (as vLLM's does): an
    operator failing there is the warm-up's failure, even when the excerpt shows only that innermost frame."""
    text = (
        f'{WORKER}  File "/env/lib/python3.11/site-packages/vllm_ascend/worker/model_runner_v1.py", line 3293, in '
        "_dummy_sampler_run\n"
        f"{WORKER}    hidden_states = hidden_states[logit_indices]\n"
        f"{WORKER}RuntimeError: The Inner error is reported as above. The process exits for this inner error, and the "
        "current working operator name is aclnnIndex.\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "warmup_failed", diagnosis.why


def test_a_feature_the_npu_generation_lacks_is_an_unsupported_device() -> None:
    text = (
        'File ".../vllm_ascend/_310p/attention/attention_mask.py", line 93, in get_attention_mask\n'
        "    raise NotImplementedError(\"310P does not support runner_type='pooling'\")\n"
        "NotImplementedError: 310P does not support runner_type='pooling'\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "unsupported_arch", diagnosis.why


def test_the_hccl_watchdog_that_stopped_on_a_device_timeout_is_a_collective_failure() -> None:
    text = (
        "[rank7]:[E1212 12:10:10.131512730 compiler_depend.ts:1675] [Rank 7] HCCL watchdog thread terminated with "
        "exception:\n"
        "[ERROR] 2025-12-12-12:10:10 (PID:402, Device:7, RankID:-1) ERR02005 DIST internal error\n"
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "[Error]: The aicore execution times out.\n"
        "EH9999[PID: 285] 2025-12-12-12:10:10.639.672 (EH9999):  [Query][Status]query event recorded status failed, "
        "runtime result = 507014[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:162]\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "nccl_error", diagnosis.why


def test_an_engine_that_finds_no_device_platform_has_an_installation_problem() -> None:
    text = (
        "INFO 01-26 17:51:40 __init__.py:183] Automatically detected platform tpu.\n"
        "ERROR 01-26 17:51:44 engine.py:387] Failed to infer device type\n"
        "ERROR 01-26 17:51:44 engine.py:387] Traceback (most recent call last):\n"
        'ERROR 01-26 17:51:44 engine.py:387]   File "/env/lib/python3.10/site-packages/vllm/config.py", line 1523, '
        "in __init__\n"
        'ERROR 01-26 17:51:44 engine.py:387]     raise RuntimeError("Failed to infer device type")\n'
        "ERROR 01-26 17:51:44 engine.py:387] RuntimeError: Failed to infer device type\n"
    )
    diagnosis = rules_alone(text)
    assert (diagnosis.diagnosis_class, diagnosis.signature) == ("unknown", "engine-finds-no-platform"), diagnosis.why


def test_the_npu_runtimes_lack_of_device_memory_under_a_compilers_wrapper_is_memory() -> None:
    text = (
        f"{WORKER}torch._dynamo.exc.BackendCompilerFailed: backend='_rbln_backend' raised:\n"
        f"{WORKER}RuntimeError: SYS_EBUSY: Lack of device memory. (code: -16)\n"
    )
    diagnosis = rules_alone(text)
    assert diagnosis.diagnosis_class == "cuda_oom", diagnosis.why


def test_the_ascend_runtime_out_of_capture_streams_and_an_attention_operator_rejecting_its_layout() -> None:
    prefix = f"{WORKER}       "  # the runtime indents its own report
    capture = (
        f"{prefix}TraceBack (most recent call last):\n"
        f"{prefix}New capture stream failed, stream_id=1987, event_id=[-1->70037].[FUNC:GetCaptureStream]\n"
        f"{prefix}rtStreamWaitEvent execution failed, reason=driver error:resource alloc fail\n"
    )
    assert rules_alone(capture).diagnosis_class == "cuda_graph_capture_failure"
    attention = (
        f"{prefix}RuntimeError: npu_fusion_attention: NPU function error: call aclnnFlashAttentionVarLenScore failed\n"
        f"{prefix}AclNN_Parameter_Error(EZ1001): FlashAttentionScore launch kernel failed.\n"
        f"{prefix}Get unsupported layout: TND[FUNC:AnalyzeLayout]\n"
    )
    assert rules_alone(attention).diagnosis_class == "attention_backend_error"
    # The same check on a quantized matmul stays a setting the kernel does not take.
    matmul = f"{prefix}AclNN_Parameter_Error(EZ1001): when weight's dtype is [int4], antiquantGroupSize should be 128\n"
    assert rules_alone(matmul).diagnosis_class == "config_error"


def test_the_ascend_runtime_failing_to_allocate_device_memory_is_out_of_memory() -> None:
    text = (
        "(EngineCore_DP0 pid=553) RuntimeError: npuSynchronizeDevice:build/CMakeFiles/torch_npu.dir/"
        "compiler_depend.ts:508 NPU function error: AclrtSynchronizeDeviceWithTimeout, error code is 507013\n"
        "(EngineCore_DP0 pid=553) EL0004: [PID: 553] 2025-09-17-04:55:13.065.712 Failed to allocate memory.\n"
        "(EngineCore_DP0 pid=553)         Possible Cause: Available memory is insufficient.\n"
        "(EngineCore_DP0 pid=553)         alloc device memory failed, runtime result = 207001\n"
    )
    assert rules_alone(text).diagnosis_class == "cuda_oom"
