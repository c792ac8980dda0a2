"""The docs match the code: every path and module they name exists, the architecture page's
layer diagram is the import-linter contract, and the README's layout block names every
package of the tree. Docs drift silently when code moves; these checks make a move that
forgets them fail."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
TOP_FOLDERS = ("services", "mapreduce", "tests", "benchmarks", "infra", "webui", "scripts", "data", "docs")
PATH = re.compile(rf"(?<![\w/.-])((?:{'|'.join(TOP_FOLDERS)})/[\w./-]*\w)")
MODULE = re.compile(r"(?<![\w./-])((?:services|mapreduce|benchmarks|tests)(?:\.\w+)+)")
FILE_SUFFIXES = ("py", "sh", "md", "toml", "txt", "yaml", "json", "html", "css", "js", "mako")


def _module_file(parts: list[str]) -> tuple[int, Path] | None:
    """The longest prefix of ``parts`` that is a module or a package, and its source file."""
    for i in range(len(parts), 0, -1):
        base = REPO.joinpath(*parts[:i])
        if base.with_suffix(".py").is_file():
            return i, base.with_suffix(".py")
        if (base / "__init__.py").is_file():
            return i, base / "__init__.py"
    return None


def _defines(source: Path, name: str) -> bool:
    text = source.read_text(encoding="utf-8")
    return bool(re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{name}\b|^\s*{name}\s*[:=]", text, re.M))


def _references(doc: Path) -> list[tuple[int, str, str]]:
    found = []
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        found += [(number, "path", m.group(1)) for m in PATH.finditer(line)]
        found += [(number, "module", m.group(1)) for m in MODULE.finditer(line)]
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_path_and_module_a_doc_names_exists(doc: Path) -> None:
    missing = []
    for number, kind, ref in _references(doc):
        if kind == "path":
            if ref == "docs/s":
                continue  # "docs/s": documents a second, not a path
            if not (REPO / ref).exists():
                missing.append(f"{doc.name}:{number}: {ref}")
            continue
        parts = ref.split(".")
        if parts[-1] in FILE_SUFFIXES:
            continue  # a file name written with dots ("services.config.py" is not a module path)
        found = _module_file(parts)
        rest = parts[found[0] :] if found else parts
        if found is None or len(rest) > 2 or (rest and not _defines(found[1], rest[0])):
            missing.append(f"{doc.name}:{number}: {ref}")
    assert not missing, "docs name paths or modules the tree lacks:\n" + "\n".join(missing)


def _root_layers() -> list[list[str]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    root = next(c for c in contracts if c["type"] == "layers" and "containers" not in c)
    return [[name.strip() for name in re.split(r"[|:]", layer)] for layer in root["layers"]]


def test_the_architecture_diagram_is_the_layer_contract() -> None:
    """Each layer of the contract is one line of the diagram, in the contract's order."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    diagram = text.split("```")[1]  # the first code block is the layer diagram
    lines = [line for line in diagram.splitlines() if line.strip()]
    where = []
    for layer in _root_layers():
        holding = [
            i for i, line in enumerate(lines) if all(re.search(rf"{re.escape(m)}\b", line) for m in layer)
        ]
        assert holding, f"no line of the diagram holds the layer {' | '.join(layer)}"
        where.append(holding[0])
    assert where == sorted(where), "the diagram's layers are not in the contract's order"
    named = {m for line in lines for m in re.findall(r"\b(?:services|mapreduce)(?:\.\w+)*", line)}
    in_contract = {m for layer in _root_layers() for m in layer}
    assert named <= in_contract, f"the diagram names what the contract does not: {named - in_contract}"


def test_the_readme_layout_names_every_package_and_top_module() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1].split("```")[1]
    wanted = ["mapreduce/"]
    for child in sorted((REPO / "services").iterdir()):
        if child.name.startswith(("_", ".")):
            continue
        if (child / "__init__.py").is_file():
            wanted.append(f"services/{child.name}/")
            wanted += [
                f"{sub.name}/"
                for sub in sorted(child.iterdir())
                if (sub / "__init__.py").is_file() and not sub.name.startswith("_")
            ]
        elif child.suffix == ".py":
            wanted.append(f"services/{child.name}")
    missing = [name for name in wanted if name not in layout]
    assert not missing, f"README's layout block lacks {missing}"
