"""The bayes stage's PVI on Flower's Simulation Runtime (transport ``flower-simulation``): the
same Δη messages, the same numbers and the same ledger as in-process (the stage never names an
engine; the rule script passes the transport)."""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("flwr", reason="Flower not installed (extra fedclust[flower])")


def test_conjugate_pvi_on_flower_equals_inprocess():
    import fedclust.transports as T
    from fedclust.bayes import experiment as E

    cfg = {"conjugate": {"n": 60, "n_centres": 2, "rounds": 2}}
    flower = E.run_conjugate(cfg, 3, T.get("flower-simulation"))
    local = E.run_conjugate(cfg, 3)
    pd.testing.assert_frame_equal(flower[0], local[0])
    pd.testing.assert_frame_equal(flower[1], local[1])
    assert flower[2] == local[2] and flower[2]["sequential_relative_error"] < 1e-12
