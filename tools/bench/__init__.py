"""run_bench and check_correctness: a lean streaming load generator for OpenAI-compatible servers."""
