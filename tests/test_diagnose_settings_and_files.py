"""Which file or setting a failure points at: the logging settings, a read-only directory, the chat template, the
model's own dimensions, the drafter's files, and a child process signalled alone.

Each log is short and invented in the engines' style; the rules run alone (an empty learned model) so that the
checks show what the rules decide.
"""

from __future__ import annotations

from tools.logs.diagnose import Diagnosis, diagnose_text
from tools.logs.learned import LearnedModel

STARTED = "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"


def rules_alone(text: str) -> Diagnosis:
    return diagnose_text(text, model=LearnedModel())


def _traceback(frames: list[tuple[str, str]], message: str) -> str:
    listed = "".join(f'  File "{path}", line 7, in {function}\n' for path, function in frames)
    return f"{STARTED}Traceback (most recent call last):\n{listed}{message}\n"


def test_a_logging_level_or_configuration_the_settings_name_is_a_setting_to_change() -> None:
    level = _traceback(
        [
            ("/opt/vllm/vllm/logger.py", "_configure_vllm_root_logger"),
            ("/usr/lib/python3.12/logging/config.py", "dictConfig"),
            ("/usr/lib/python3.12/logging/__init__.py", "_checkLevel"),
        ],
        "ValueError: Unknown level: 'VERBOSE'",
    )
    assert rules_alone(level).diagnosis_class == "config_error"
    missing = _traceback(
        [("/opt/vllm/vllm/logger.py", "configure_logging")],
        "RuntimeError: Could not load logging config. File does not exist: /etc/app/log.json",
    )
    assert rules_alone(missing).diagnosis_class == "config_error"


def test_a_directory_on_a_read_only_file_system_is_a_setting_or_a_mount_to_change() -> None:
    text = _traceback(
        [("/opt/vllm/vllm/compilation/backends.py", "configure_post_pass")],
        "OSError: [Errno 30] Read-only file system: '/cache/vllm/torch_compile_cache'",
    )
    assert rules_alone(text).diagnosis_class == "config_error"


def test_a_chat_template_that_does_not_compile_is_the_models_file() -> None:
    text = (
        STARTED
        + "(APIServer pid=3) INFO 05-01 10:00:09 [launcher.py:1] Application startup complete.\n"
        + "(APIServer pid=3) ERROR 05-01 10:01:00 [hf.py:486] Error when compiling Jinja template\n"
        + "(APIServer pid=3) ERROR 05-01 10:01:00 [hf.py:486] jinja2.exceptions.TemplateSyntaxError: expected token "
        "'end of print statement', got 'message'\n"
    )
    assert rules_alone(text).diagnosis_class == "model_load_error"


def test_two_of_the_models_own_dimensions_that_do_not_divide_are_its_configuration() -> None:
    frames = [("/opt/vllm/vllm/model_executor/layers/attention/attention.py", "__init__")]
    heads = _traceback(frames, "AssertionError: num_heads (6) is not divisible by num_kv_heads (4)")
    assert rules_alone(heads).diagnosis_class == "model_load_error"
    parallel = _traceback(frames, "AssertionError: num_heads (6) is not divisible by tensor_parallel_size (4)")
    assert rules_alone(parallel).diagnosis_class == "config_error"  # a setting to change


def test_a_file_the_engine_cannot_use_at_the_drafters_path_is_the_drafters() -> None:
    arguments = (
        "(APIServer pid=3) INFO 05-01 10:00:01 [utils.py:1] non-default args: {'model': '/models/target', "
        "'speculative_config': {'method': 'eagle3', 'model': '/models/drafter-b', 'num_speculative_tokens': 3}}\n"
    )
    failure = (
        "Traceback (most recent call last):\n"
        '  File "/opt/vllm/transformers/configuration_utils.py", line 9, in _get_config_dict\n'
        "OSError: It looks like the config file at '/models/drafter-b/config.json' is not a valid JSON file.\n"
    )
    assert rules_alone(STARTED + arguments + failure).diagnosis_class == "spec_decode_problem"
    target = failure.replace("/models/drafter-b/", "/models/target/")
    assert rules_alone(STARTED + arguments + target).diagnosis_class == "model_load_error"


def test_a_child_signalled_alone_while_the_server_never_stopped_is_killed_not_stopped() -> None:
    ready = STARTED + "(APIServer pid=3) INFO 05-01 10:00:09 [launcher.py:1] Application startup complete.\n"
    child = (
        "(EngineCore pid=4) INFO 05-01 10:05:00 [core.py:1454] [shutdown] EngineCore: trigger received signal=SIGTERM\n"
    )
    dead = (
        "(APIServer pid=3) WARNING 05-01 10:05:01 [core_client.py:817] [shutdown] MPClient: engine core exited "
        "unexpectedly; starting cleanup\n"
    )
    assert rules_alone(ready + child + dead).diagnosis_class == "process_killed"
    stop = "(APIServer pid=3) INFO 05-01 10:05:00 [launcher.py:254] [shutdown] API server: shutdown triggered\n"
    assert rules_alone(ready + stop + child + dead).diagnosis_class == "stopped"


def test_the_drafters_path_in_the_settings_dump_itself_is_no_file_error() -> None:
    arguments = (
        "(APIServer pid=3) INFO 05-01 10:00:01 [utils.py:1] non-default args: {'model': '/models/target', "
        "'uvicorn_log_level': 'error', 'speculative_config': {'method': 'eagle3', 'model': '/models/drafter-b'}}\n"
    )
    refused = _traceback([("/opt/vllm/vllm/engine/arg_utils.py", "create_engine_config")], "ValueError: max_num_seqs 0")
    assert rules_alone(refused.replace(STARTED, STARTED + arguments)).diagnosis_class == "config_error"


def test_weights_that_fail_to_load_after_the_drafter_began_loading_are_the_drafters() -> None:
    text = (
        STARTED
        + "(Worker pid=5) INFO 05-01 10:00:20 [default_loader.py:1] Loading weights took 2.10 seconds\n"
        + "(Worker pid=5) INFO 05-01 10:00:21 [model_runner.py:75] Loading drafter model...\n"
        + "Loading safetensors checkpoint shards:   0% Completed | 0/1 [00:00<?, ?it/s]\n"
        + "(Worker pid=5) ERROR 05-01 10:00:22 [executor.py:9] safetensors_rust.SafetensorError: Error while "
        "deserializing header: incomplete metadata, file not fully covered\n"
    )
    assert rules_alone(text).diagnosis_class == "spec_decode_problem"
    target = text.replace("Loading drafter model...", "Starting to load model /models/target...")
    assert rules_alone(target).diagnosis_class == "model_load_error"


def test_an_engine_that_stops_starting_as_vllms_eagle_proposer_loads_points_at_the_drafter() -> None:
    # The excerpt ends inside the traceback, before its exception line: only the phase is left to read.
    prefix = "(EngineCore_DP0 pid=9) "
    text = (
        STARTED
        + f"{prefix}INFO 05-01 10:00:20 [default_loader.py:1] Loading weights took 2.10 seconds\n"
        + f"{prefix}INFO 05-01 10:00:21 [eagle.py:644] Assuming the EAGLE head shares the same vocab embedding "
        "with the target model.\n"
        + f"{prefix}ERROR 05-01 10:00:22 [core.py:712] EngineCore failed to start.\n"
        + f"{prefix}ERROR 05-01 10:00:22 [core.py:712] Traceback (most recent call last):\n"
        + f'{prefix}ERROR 05-01 10:00:22 [core.py:712]   File "/opt/vllm/vllm/v1/engine/core.py", line 703, in '
        "run_engine_core\n"
        + f"{prefix}ERROR 05-01 10:00:22 [core.py:712]     engine_core = EngineCoreProc(*args, **kwargs)\n"
    )
    assert rules_alone(text).diagnosis_class == "spec_decode_problem"
    separately = text.replace(
        "Assuming the EAGLE head shares the same vocab embedding with the target model.",
        "The EAGLE head's vocab embedding will be loaded separately from the target model.",
    )
    assert rules_alone(separately).diagnosis_class == "spec_decode_problem"
    target = text.replace(
        "[eagle.py:644] Assuming the EAGLE head shares the same vocab embedding with the target model.",
        "[gpu_model_runner.py:1] Model loading took 8.1 GiB and 3.2 seconds",
    )
    assert rules_alone(target).diagnosis_class != "spec_decode_problem"


def test_the_resource_trackers_own_error_is_a_bystander_and_a_file_size_limit_is_the_hosts() -> None:
    tracker = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/multiprocessing/resource_tracker.py", line 239, in main\n'
        "KeyError: '/psm_1f2e3d'\n"
    )
    failure = _traceback(
        [("/usr/lib/python3.12/multiprocessing/shared_memory.py", "__init__")], "OSError: [Errno 27] File too large"
    )
    diagnosis = rules_alone(tracker + failure)
    assert diagnosis.diagnosis_class == "unknown" and diagnosis.confidence >= 0.5, diagnosis.why
    assert diagnosis.key_line == "OSError: [Errno 27] File too large"
    assert "raise_file_size_limit" in [remedy.id for remedy in diagnosis.remedies]
