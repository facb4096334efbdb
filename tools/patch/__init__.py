"""patch_file and revert_patch: confined atomic writes (write_guard.py) and unified diffs (unified_diff.py)."""
