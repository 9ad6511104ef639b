"""pass^k and pass@k against hand-computed values."""

from __future__ import annotations

import pytest

from veritask.verify import pass_at_k, pass_hat_k, pass_hat_k_table

TWO_OF_FOUR = [True, False, 1, 0]


def test_pass_hat_k_two_of_four() -> None:
    assert pass_hat_k(TWO_OF_FOUR, 1) == pytest.approx(0.5)
    assert pass_hat_k(TWO_OF_FOUR, 2) == pytest.approx(1 / 6)  # C(2,2)/C(4,2)
    assert pass_hat_k(TWO_OF_FOUR, 3) == 0.0
    assert pass_hat_k(TWO_OF_FOUR, 4) == 0.0


def test_pass_hat_k_edges() -> None:
    assert pass_hat_k([True] * 3, 3) == 1.0
    assert pass_hat_k([1, 1, 1, 0], 2) == pytest.approx(3 / 6)  # C(3,2)/C(4,2)
    with pytest.raises(ValueError, match="exceeds"):
        pass_hat_k(TWO_OF_FOUR, 5)
    with pytest.raises(ValueError, match="at least 1"):
        pass_hat_k(TWO_OF_FOUR, 0)


def test_pass_at_k_two_of_four() -> None:
    assert pass_at_k(4, 2, 1) == pytest.approx(0.5)
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6)  # 1 - C(2,2)/C(4,2)
    assert pass_at_k(4, 2, 3) == 1.0  # C(2,3) = 0
    assert pass_at_k(4, 0, 4) == 0.0
    with pytest.raises(ValueError):
        pass_at_k(4, 5, 1)
    with pytest.raises(ValueError):
        pass_at_k(4, 2, 5)


def test_pass_hat_k_table_averages_over_tasks() -> None:
    results = {"a": TWO_OF_FOUR, "b": [True, True, True, True], "c": [False] * 4}
    table = pass_hat_k_table(results, [1, 2])
    assert list(table) == ["pass^1", "pass^2"]
    assert table["pass^1"] == pytest.approx((0.5 + 1 + 0) / 3)
    assert table["pass^2"] == pytest.approx((1 / 6 + 1 + 0) / 3)


def test_pass_hat_k_table_defaults_to_the_fewest_trials() -> None:
    table = pass_hat_k_table({"a": [True, False, True], "b": [True, True]})
    assert list(table) == ["pass^1", "pass^2"]
    assert table["pass^2"] == pytest.approx((1 / 3 + 1) / 2)


def test_pass_hat_k_table_errors() -> None:
    with pytest.raises(ValueError, match="no task"):
        pass_hat_k_table({}, [1])
    with pytest.raises(ValueError, match="task 'b'"):
        pass_hat_k_table({"a": [True] * 3, "b": [True]}, [2])
