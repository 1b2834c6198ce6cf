"""The one percent formatter never rounds a failing figure to 100% or a non-zero one to 0%."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from coverage_core.display import percent
from coverage_core.review.gate import _threshold


def test_edge_figures_read_as_what_they_are() -> None:
    assert percent(99_999, 100_000) == "99.99%"
    assert percent(1, 1_000_000) == "0.01%"
    assert percent(0, 5) == "0.00%" and percent(5, 5) == "100.00%"
    assert percent(1, 3) == "33.33%" and percent(2, 3) == "66.67%"
    assert percent(0, 0) == "-"
    assert percent(1, 8, digits=0) == "12%" and percent(3, 8, digits=1) == "37.5%"


@given(
    st.integers(min_value=1, max_value=10**12).flatmap(
        lambda found: st.tuples(st.integers(min_value=0, max_value=found), st.just(found))
    ),
    st.integers(0, 4),
)
def test_a_percent_is_within_half_a_unit_and_never_exaggerates_to_the_edges(
    counts: tuple[int, int], digits: int
) -> None:
    hit, found = counts
    text = percent(hit, found, digits)
    shown = Fraction(text.rstrip("%"))
    exact = Fraction(100 * hit, found)
    unit = Fraction(1, 10**digits)
    assert abs(shown - exact) <= unit  # at most one unit away (the edge rule moves it by less than one)
    if hit < found:
        assert shown < 100
    if hit > 0:
        assert shown > 0
    if hit in (0, found):
        assert shown == exact


def test_a_failing_gate_never_reports_its_figure_as_the_minimum_it_missed() -> None:
    check = _threshold("patch", "patch coverage", 99_999, 100_000, 100.0, empty_passes=True)
    assert not check.passed and "(99.99%)" in check.detail and "100.00%" not in check.detail
