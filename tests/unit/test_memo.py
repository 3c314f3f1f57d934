"""The bounded memo the row paths keep JSON text in."""

from __future__ import annotations

from palaestra.core.memo import Memo


def test_a_value_is_made_once_per_key_and_the_memo_empties_when_full() -> None:
    made: list[int] = []

    def make(n: int) -> str:
        made.append(n)
        return f"text {n}"

    memo: Memo[str] = Memo(limit=2)
    assert [memo.get(n, lambda n=n: make(n)) for n in (1, 2, 1, 2)] == [
        "text 1",
        "text 2",
        "text 1",
        "text 2",
    ]
    assert made == [1, 2]
    assert memo.get(3, lambda: make(3)) == "text 3"  # full: forgets 1 and 2, keeps 3
    assert memo.kept == {3: "text 3"}
    memo.get(1, lambda: make(1))
    assert made == [1, 2, 3, 1]


def test_an_unhashable_key_is_made_each_time_and_not_kept() -> None:
    memo: Memo[str] = Memo()
    calls = []
    for _ in range(2):
        assert memo.get(("a", [1, 2]), lambda: calls.append(1) or "x") == "x"
    assert len(calls) == 2 and memo.kept == {}
