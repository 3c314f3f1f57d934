"""Sparklines of episode rewards: bins, heights and gaps."""

from __future__ import annotations

import math

import pytest

from palaestra.report.trend import BLOCKS, binned, for_console, sparkline


def test_one_block_per_value_from_lowest_to_highest() -> None:
    assert sparkline([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], 8) == BLOCKS
    assert sparkline([7.0, 0.0], 10) == "█▁"


def test_more_values_than_width_are_averaged_in_bins() -> None:
    values = [0.0, 2.0, 6.0, 8.0, 20.0, 22.0]

    assert binned(values, 3) == [1.0, 7.0, 21.0]
    assert sparkline(values, 3) == "▁▃█"  # 7 is 0.3 of the way from 1 to 21: 2.1 of 7 steps
    assert len(sparkline([float(i) for i in range(1000)], 40)) == 40


def test_gaps_flat_lines_and_nothing() -> None:
    assert sparkline([1.0, math.nan, 3.0], 3) == "▁ █"
    assert sparkline([5.0, 5.0, 5.0], 3) == BLOCKS[3] * 3
    assert sparkline([math.nan, math.inf], 2) == "  "
    assert sparkline([], 5) == ""
    with pytest.raises(ValueError, match="at least 1 character"):
        sparkline([1.0], 0)


def test_a_sparkline_on_a_console_without_the_blocks_is_in_ascii() -> None:
    line = sparkline([0, 1, 2, 3, 4, 5, 6, 7, math.nan], 9)
    assert for_console(line, "utf-8") == line == BLOCKS + " "
    assert for_console(line, "ascii") == for_console(line, "latin-1") == "_.-:=+*# "
