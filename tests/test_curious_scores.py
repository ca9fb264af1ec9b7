"""The honest-but-curious server on a centre's scalar scores and losses (the map:
``tests/test_curious_coverage.py``): the stage's real centres through ``federate`` with a
:class:`RecordingLedger`, the attack on the kept messages and the server's own broadcasts only.
Defence off: the centres' floors at 1 (``OFF``); on: their own default floors."""

from __future__ import annotations

import numpy as np
import pytest

from fedclust.federation.disclosure import DEFAULT_POLICY
from fedclust.privacy.recorder import RecordingLedger
from fedclust.privacy.suite import OFF


# ------------------------------------------------------------------ admm_objective
def _admm_logistic(policy, iters: int = 12):
    from fedclust.admm.admm import AdmmSettings, admm_distributed

    g = np.random.default_rng(6)
    A = np.hstack([g.normal(size=(121, 4)), np.ones((121, 1))])
    y = np.where(A @ g.normal(size=5) + g.normal(size=121) > 0, 1.0, -1.0)
    blocks = [("c0", A[:1], y[:1]), ("c1", A[1:61], y[1:61]), ("c2", A[61:], y[61:])]
    led = RecordingLedger()
    admm_distributed(blocks, AdmmSettings("logistic", 0.1, rho=1.0, max_iter=iters), led,
                     policies=dict.fromkeys(("c0", "c1", "c2"), policy))  # fmt: skip
    return A, y, led


def _objective_row(led, cid: str, n_total: int):
    """A centre's loss at each broadcast z_k is (1/N)·Σ log(1 + exp(−y a·z_k)); for one row,
    −log(expm1(N·loss_k)) = y·a·z_k is linear in y·a: least squares over the iterations. The
    bias column (a₋₁ = 1) gives y, then a. None when the fit is not exact (more than one row)."""
    zs = [np.asarray(m["z"], float) for r, m in led.kept
          if r["protocol"] == "admm_consensus" and r["receiver"] == cid]  # fmt: skip
    loss = [float(m["loss"]) for _, m in led.received(protocol="admm_objective", sender=cid)]
    if not loss:
        return None
    Z, rhs = np.array(zs[: len(loss)]), -np.log(np.expm1(n_total * np.array(loss)))
    w, *_ = np.linalg.lstsq(Z, rhs, rcond=None)
    if np.max(np.abs(Z @ w - rhs)) > 1e-6 * max(1.0, np.max(np.abs(rhs))):
        return None
    label = float(np.sign(w[-1]))
    return w / label, label


@pytest.mark.parametrize("defence", [False, True])
def test_admm_objective_losses_of_a_one_row_centre_give_the_row_only_without_the_floor(defence):
    """Logistic consensus ADMM: each iteration a centre sends its weighted loss at the z the
    server broadcast. For a one-row centre the losses are a linear system in y·a: five
    iterations give the row and its label exactly. With its own floor (the GLM floor) the centre
    takes no part; a 60-row centre's losses fit no single row."""
    A, y, led = _admm_logistic(DEFAULT_POLICY if defence else OFF)
    got = _objective_row(led, "c0", 121)
    if not defence:
        a, label = got
        np.testing.assert_allclose(a, A[0], atol=1e-8)
        assert label == y[0]
    else:
        assert got is None and led.received(protocol="admm_objective", sender="c0") == []
        assert "c0" in set(led.abstentions()["center"])
    assert len(led.received(protocol="admm_objective", sender="c1")) == 12
    assert _objective_row(led, "c1", 121) is None
