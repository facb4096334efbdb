"""Accelerators other than NVIDIA's in their runtimes' own words: Ascend's CANN operator store and Intel's Level Zero
runtime (XPU). Each log is short and invented in the style of the engine's plugin for that device; the rules run
alone (an empty learned model) so that the checks show what the rules decide.
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
