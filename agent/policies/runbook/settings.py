"""How hard the runbook benchmarks and how long it keeps trying; one place for its numbers."""

from __future__ import annotations

from pydantic import BaseModel, Field


class RunbookSettings(BaseModel):
    input_len: int = Field(1000, ge=1)
    output_len: int = Field(512, ge=1)
    single_stream_prompts: int = Field(5, ge=1)
    peak_concurrency: int = Field(64, ge=2)
    peak_prompts: int = Field(256, ge=2)
    # Speculation is kept only when single-stream output tok/s beats the baseline by this factor.
    speculative_gain_needed: float = Field(1.05, ge=1.0)
    # Launch attempts for one purpose before asking a human.
    max_attempts: int = Field(8, ge=1)
    drafter_epochs: int = Field(2, ge=1)
    drafter_samples: int = Field(10_000, ge=1)
    drafter_poll_seconds: float = Field(300.0, gt=0)
    # How often launch_engine looks at a starting engine (log, counters, /health).
    launch_poll_seconds: float = Field(2.0, gt=0)
    health_every_seconds: float = Field(10.0, gt=0)

    @classmethod
    def quick(cls) -> RunbookSettings:
        """Short benchmarks for the simulated host and demos (the twin's engines stream in real time)."""
        return cls(input_len=256, output_len=64, single_stream_prompts=2, peak_concurrency=64, peak_prompts=64,
                   drafter_samples=48, drafter_epochs=8, drafter_poll_seconds=0.5, launch_poll_seconds=0.2,
                   health_every_seconds=0.5)
