"""The one document reader (controller/intent/documents.py): YAML aliases are bounded by
what they expand to, before anything walks the expansion, and files are read no further
than the size limit (issue 25, "Inputs")."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.errors import DocumentInvalid, IntentInvalid
from controller.intent import documents
from controller.intent.documents import (
    DOCUMENT_BYTES_MAX,
    NESTING_MAX,
    VALUES_MAX,
    parse_yaml_document,
    read_document_file,
)
from controller.intent.loader import read_intent_document


def alias_bomb(levels: int = 9) -> str:
    """The "billion laughs": each anchor a list of nine aliases of the one before, so the
    last stands for 9^levels strings (409 bytes at nine levels)."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, levels):
        aliases = ",".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{aliases}]")
    return "\n".join(lines) + "\n"


def test_the_alias_bomb_is_small_and_refused_by_what_it_expands_to() -> None:
    text = alias_bomb()
    assert len(text.encode()) < 450
    with pytest.raises(DocumentInvalid, match=f"more than {VALUES_MAX} values"):
        parse_yaml_document(text)


def test_the_alias_bomb_file_is_an_invalid_intent_where_apply_reads_it(tmp_path: Path) -> None:
    # `sluice apply` and `import-switches` read files through read_intent_document; on main
    # it returned the shared-node structure, which hung sending it as JSON.
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    with pytest.raises(IntentInvalid) as caught:
        read_intent_document(path)
    assert [p.path for p in caught.value.problems] == ["intent"]
    assert "aliases included" in caught.value.problems[0].reason


def test_aliases_that_expand_within_the_limits_are_read_as_written() -> None:
    text = "base: &base {port: 50051, target: t}\nswitches: [*base, *base, {port: 1}]\n"
    data = parse_yaml_document(text)
    assert data == {
        "base": {"port": 50051, "target": "t"},
        "switches": [{"port": 50051, "target": "t"}, {"port": 50051, "target": "t"}, {"port": 1}],
    }


def test_aliases_of_long_strings_are_bounded_by_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(documents, "EXPANDED_CHARS_MAX", 1000)
    text = "s: &s " + "x" * 100 + "\nmany: [" + ",".join(["*s"] * 20) + "]\n"
    with pytest.raises(DocumentInvalid, match="more than 1000 characters"):
        parse_yaml_document(text)


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    with pytest.raises(DocumentInvalid, match="alias inside its own anchor"):
        parse_yaml_document("loop: &loop [1, *loop]\n")


def test_aliases_cannot_nest_past_the_depth_limit() -> None:
    # Each anchor nests the one before one level deeper: no bracket run is deep, the
    # expansion is.
    lines = ["l0: &l0 [1]"] + [f"l{i}: &l{i} [*l{i - 1}]" for i in range(1, NESTING_MAX + 2)]
    with pytest.raises(DocumentInvalid, match=f"deeper than {NESTING_MAX} levels"):
        parse_yaml_document("\n".join(lines) + "\n")


def test_a_file_past_the_size_limit_is_refused_without_reading_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"a: " + b"x" * (DOCUMENT_BYTES_MAX + 10) + b"\n")
    asked: list[int] = []
    real_open = Path.open

    def counting_open(self: Path, *args: object, **kwargs: object) -> object:
        handle = real_open(self, *args, **kwargs)  # type: ignore[call-overload]
        read = handle.read

        def bounded_read(size: int = -1) -> bytes:
            asked.append(size)
            return read(size)  # type: ignore[no-any-return]

        handle.read = bounded_read
        return handle

    monkeypatch.setattr(Path, "open", counting_open)
    with pytest.raises(DocumentInvalid, match=f"larger than {DOCUMENT_BYTES_MAX} bytes"):
        read_document_file(path)
    assert asked == [DOCUMENT_BYTES_MAX + 1]
