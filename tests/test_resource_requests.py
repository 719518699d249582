"""A resource request's arrays are shared by the workloads that ask the same amounts, as
the same binary64 values; 0.0 and -0.0 are equal keys but not equal bits (a free 0 less
one of them differs in sign), so a zero amount keeps its own."""

from __future__ import annotations

import math

from placed.model import Workload
from placed.policy.capacity import ResourcesFit


def test_equal_amounts_share_their_arrays_but_a_zero_keeps_its_sign() -> None:
    fit = ResourcesFit(["cpu", "memory"])
    one = fit.prepare(Workload("a", resources={"memory": 2, "cpu": 1.0}))
    other = fit.prepare(Workload("b", resources={"cpu": 1, "memory": 2.0}))
    assert one is not None and one is other
    assert one.row_list == [0, 1] and one.amount_list == [1.0, 2.0]
    assert not one.amounts.flags.writeable
    plus = fit.prepare(Workload("c", resources={"cpu": 0.0}))
    minus = fit.prepare(Workload("d", resources={"cpu": -0.0}))
    assert plus is not None and minus is not None
    assert math.copysign(1.0, plus.amount_list[0]) == 1.0
    assert math.copysign(1.0, minus.amount_list[0]) == -1.0
    assert math.copysign(1.0, float(minus.amounts[0])) == -1.0
