"""The bounded memo the row paths keep JSON text in."""

from __future__ import annotations

import pytest

from palaestra.core.memo import TRIAL, Memo, text_key
from palaestra.core.nonfinite import json_text


def test_a_value_is_made_once_per_key_and_the_memo_empties_when_full() -> None:
    made: list[int] = []

    def make(n: int) -> str:
        made.append(n)
        return f"text {n}"

    memo: Memo[str] = Memo(limit=2)
    assert [memo.get_or_make(n, make, n) for n in (1, 2, 1, 2)] == [
        "text 1",
        "text 2",
        "text 1",
        "text 2",
    ]
    assert made == [1, 2]
    assert memo.get_or_make(3, make, 3) == "text 3"  # full: forgets 1 and 2, keeps 3
    assert memo == {3: "text 3"}
    memo.get_or_make(1, make, 1)
    assert made == [1, 2, 3, 1]


def test_an_unhashable_key_is_made_each_time_and_not_kept() -> None:
    memo: Memo[str] = Memo()
    calls: list[object] = []

    def make(value: object) -> str:
        calls.append(value)
        return "x"

    for _ in range(2):
        assert memo.get_or_make(("a", [1, 2]), make, 1) == "x"
    assert calls == [1, 1] and memo == {}


def test_a_memo_whose_values_hardly_repeat_says_keeping_them_does_not_pay() -> None:
    repeating: Memo[int] = Memo()
    fresh: Memo[int] = Memo()
    for n in range(TRIAL):
        repeating.get_or_make(n % 3, abs, n)  # three keys: nearly every lookup a hit
        assert fresh.pays  # judged only after the trial
        fresh.get_or_make(n, abs, n)  # every key new (a continuous reward)
    assert repeating.pays
    assert not fresh.pays


@pytest.mark.parametrize(
    "values",
    [(1, 1.0, True), (0, 0.0, -0.0, False), (2, 2.0), (float("inf"), 1e308 * 10)],
    ids=["one", "zero", "two", "inf"],
)
def test_text_keys_tell_apart_equal_values_whose_texts_differ(values: tuple[object, ...]) -> None:
    """(1 == 1.0 == True and 0.0 == -0.0, but their JSON texts differ: a memo of texts by the
    plain items would store a step's reward or set point as the text of an earlier one)"""
    memo: Memo[str] = Memo()
    for value in values:
        items = {"reward": value}
        assert memo.get_or_make(text_key(items.items()), json_text, items) == json_text(items)
    texts = {json_text({"reward": value}) for value in values}
    assert len(memo) == len(texts)


def test_text_keys_are_equal_for_items_of_equal_texts_and_unhashable_for_lists() -> None:
    assert text_key([("a", 1.5), ("b", -0.0)]) == text_key([("a", 1.5), ("b", -0.0)])
    assert text_key([("a", 1)]) != text_key([("b", 1)])
    with pytest.raises(TypeError):
        hash(text_key([("a", [1, 2])]))  # (made each time: see the test above)
