from placed.engine.planner import Planner
from placed.spec import load_spec_text


def test_a_single_conductor_takes_its_node() -> None:
    spec = load_spec_text(
        """
inventory:
  - {id: c1, kind: conductor, tags: [rack10]}
workloads:
  - {name: n1, mode: mapping, tags: [rack10]}
"""
    )
    result = Planner(spec).plan()
    assert [(p.unit, p.target, p.score) for p in result.placements] == [("n1/0", "c1", 1.0)]
