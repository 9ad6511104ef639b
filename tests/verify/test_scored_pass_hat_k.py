"""pass^k over scored trials only, for runs where some episodes errored."""

from __future__ import annotations

import pytest

from veritask.verify import pass_hat_k_scored, pass_hat_k_table


def test_tasks_with_fewer_scored_trials_than_k_are_left_out_of_pass_k() -> None:
    results = {"a": [True, True], "b": [True, False], "c": [False]}
    table = pass_hat_k_scored(results, [1, 2, 3])
    assert table["pass^1"] == pytest.approx((1.0 + 0.5 + 0.0) / 3)
    assert table["pass^2"] == pytest.approx((1.0 + 0.0) / 2)  # c has one scored trial
    assert table["pass^3"] is None


def test_without_errors_it_agrees_with_the_plain_table() -> None:
    results = {"a": [True, False, True], "b": [False, False, True]}
    assert pass_hat_k_scored(results, [1, 2, 3]) == pass_hat_k_table(results, [1, 2, 3])


def test_nothing_scored_gives_no_metric() -> None:
    assert pass_hat_k_scored({"a": [], "b": []}, [1]) == {"pass^1": None}
    assert pass_hat_k_scored({}, [1, 2]) == {"pass^1": None, "pass^2": None}
