"""The shape of the code itself: no function in the package above cyclomatic complexity 15."""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit

PACKAGE = Path(__file__).resolve().parents[2] / "palaestra"
LIMIT = 15


def test_no_function_is_above_complexity_15() -> None:
    over = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for block in cc_visit(path.read_text(encoding="utf-8")):
            if block.complexity > LIMIT:
                where = f"{path.relative_to(PACKAGE.parent)}:{block.lineno}"
                over.append(f"{where} {block.fullname} ({block.complexity})")
    assert not over, "split these functions:\n" + "\n".join(over)
