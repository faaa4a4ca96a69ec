"""The real-switch demo's reading of why a SONiC daemon exited (lab/demo_real.py)."""

from __future__ import annotations

from lab.demo_real import crash_line

GO_CRASH = """I1130 02:12:29.607850    1058 mixed_db_client.go:1542] JsonPatch: [...]
fatal error: concurrent map read and map write

goroutine 164 [running]:
internal/runtime/maps.fatal({0x1a6c860?, 0xba792a83960?})
"""


def test_a_go_runtime_crash_is_named_by_its_fatal_error_line() -> None:
    assert crash_line(GO_CRASH) == "fatal error: concurrent map read and map write"
    assert crash_line("starting\npanic: runtime error: index out of range\n\ngoroutine 1") == (
        "panic: runtime error: index out of range"
    )


def test_any_other_exit_is_named_by_its_last_line() -> None:
    assert crash_line("orchagent starting\nSAI switch create failed\n\n") == (
        "SAI switch create failed"
    )
    assert crash_line("") == "no log"
