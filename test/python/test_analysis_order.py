"""stable_topological_order: given order where dependences allow, cycles left out."""

from autofusion.analysis.order import stable_topological_order


def test_keeps_given_order_where_dependences_allow() -> None:
    # 0 reads 2, so 2 moves before it; 1 and 3 keep their places relative to the rest.
    assert stable_topological_order([{2}, set(), set(), {0}]) == [1, 2, 0, 3]
    assert stable_topological_order([set(), {0}, {1}]) == [0, 1, 2]


def test_cycle_and_its_dependents_are_left_out() -> None:
    # 1 <-> 2 form a cycle; 3 depends on it; 0 is free.
    assert stable_topological_order([set(), {2}, {1}, {1}]) == [0]
