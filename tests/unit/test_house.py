"""The product (controller, api, vsonic) never imports ``lab``, and nothing ships it.

``lab/`` holds what exists to demonstrate or test sluice (the demo, namespaced hosts, a local
PostgreSQL). The test reads every product module's syntax tree, so an import hidden in a
function body counts as much as one at the top.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_PACKAGES = ("controller", "api", "vsonic")
LAB = "lab"


def imported_modules(tree: ast.AST) -> Iterator[str]:
    """Every absolute module name an ``import`` or ``from ... import`` statement names."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def lab_imports(package: Path) -> list[str]:
    """``path: module`` for each import of ``lab`` (or a submodule) under ``package``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for module in imported_modules(tree):
            if module == LAB or module.startswith(LAB + "."):
                found.append(f"{path.relative_to(ROOT)}: {module}")
    return found


def test_imported_modules_sees_nested_and_from_imports() -> None:
    tree = ast.parse("def f():\n    import lab.netns\nfrom lab import localpg\nfrom . import x\n")
    assert sorted(imported_modules(tree)) == ["lab", "lab.netns"]


@pytest.mark.parametrize("package", PRODUCT_PACKAGES)
def test_product_package_does_not_import_lab(package: str) -> None:
    assert lab_imports(ROOT / package) == []


def test_lab_is_a_package_beside_the_product() -> None:
    assert (ROOT / LAB / "__init__.py").is_file()
    assert not (ROOT / "controller" / LAB).exists()


def test_wheel_ships_only_the_product() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    assert LAB not in packages
    assert set(packages) <= set(PRODUCT_PACKAGES)


@pytest.mark.parametrize("dockerfile", sorted((ROOT / "docker").glob("*.Dockerfile")))
def test_images_never_copy_lab(dockerfile: Path) -> None:
    ignore = Path(f"{dockerfile}.dockerignore").read_text().splitlines()
    assert "**" in ignore, "the build context starts from nothing and allows the product in"
    assert not any(line.startswith(f"!{LAB}") for line in ignore)
    copies = [line.split() for line in dockerfile.read_text().splitlines()]
    copied = [words[1] for words in copies if words[:1] == ["COPY"] and "--from" not in words[1]]
    assert not any(source.rstrip("/").startswith(LAB) for source in copied)
