"""Survival, FedCRef and ADMM on the federation core: the same numbers as a plain loop, declared
protocols, and a forbidden message raises DisclosureError naming centre, protocol and rule."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedclust.admm import admm as M
from fedclust.admm.protocols import PROTOCOLS as ADMM_PROTOCOLS
from fedclust.errors import DisclosureError, InputDataError
from fedclust.fedcref.algorithm import GROUP_FIT, Client, FedCRefParams, train_group
from fedclust.fedcref.system import oracle_partition
from fedclust.federation import Ledger, LedgerClientProxy, weighted_average
from fedclust.privacy.recorder import RecordingLedger
from fedclust.survival import strategies as S
from fedclust.survival.model import get_parameters
from fedclust.survival.train import HyperParams, LrRule, ModelConfig

MC = ModelConfig(hidden=(6, 3), l1=1e-3, l2=1e-3)
HP = HyperParams(fe=3, ie=2, batches=1, lr=0.05)


def _surv(n=60, p=4, seed=0):
    g = np.random.default_rng(seed)
    x = g.normal(size=(n, p))
    t = g.exponential(np.exp(-0.8 * x[:, 0]))
    e = (g.random(n) < 0.7).astype(int)
    return x, t, e


def _survival_clients(cls=S.SurvivalClient, sizes=(30, 45, 60)):
    out = []
    for i, n in enumerate(sizes):
        x, t, e = _surv(n, seed=i)
        out.append(cls(f"centre{i}", x, t, e, MC, seed=100 + i))
    return out


def _init():
    torch.manual_seed(0)
    return get_parameters(MC.build(4))


def test_survival_weights_averaging_equals_plain_fedavg_loop():
    """run_rounds + LedgerClientProxy give the numbers of the hand loop (evaluate → lr rule →
    local fit → n-weighted mean) bit for bit; every message is under a declared protocol."""
    init, led = _init(), Ledger()
    got = S.run_weights_averaging(_survival_clients(), init, HP, MC, led)[0][0]
    clients, params, rule = _survival_clients(), [p.copy() for p in init], LrRule(HP.lr, 1e-3)
    for k in range(HP.fe):
        ev = [c.evaluate(params) for c in clients]
        lr = rule.update(sum(m["loss_sum"] for m in ev) / sum(m["n_events"] for m in ev), k)
        cfg = {"epochs": HP.ie, "batches": HP.batches, "lr": lr}
        params = weighted_average([c.fit(params, cfg)[:2] for c in clients])
    for a, b in zip(got, params, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(got[0], init[0])
    t = led.table()
    assert set(t["protocol"]) == {"survival_fit", "survival_evaluate", "survival_evaluate_request"}
    assert len(t) == HP.fe * 3 * 4  # evaluate request/answer + fit global/update per centre
    assert t["floats"].max() < 30 * 4  # no message as large as a centre's covariate rows


class _TinyUpdate(S.SurvivalClient):
    def fit(self, parameters, config):
        params, _, m = super().fit(parameters, config)
        return params, 1, m  # claims an aggregate over one patient


class _LeakyEvaluate(S.SurvivalClient):
    def evaluate(self, parameters, config=None):
        return {**super().evaluate(parameters), "risk": self.t_np}  # per-patient rows


@pytest.mark.parametrize("runner", ["weights_averaging", "sequential"])
def test_survival_too_small_update_is_refused_at_the_centre_and_recorded(runner):
    """The centre's own check (issue 22) refuses the update before it leaves: the centre
    abstains every round, the reason names the protocol's rule and carries no number, and the
    others train on."""
    clients = _survival_clients()
    clients[1] = _survival_clients(_TinyUpdate)[1]
    led = Ledger()
    S.train_strategy(runner, clients, _init(), HP, MC, led, np.random.default_rng(0))
    a = led.abstentions()
    assert set(a.center) == {"centre1"} and set(a.protocol) == {"survival_fit"}
    assert len(a) == HP.fe and all("min-samples" in r for r in a.reason)
    assert not any(ch.isdigit() for r in a.reason for ch in r)
    t = led.table()
    assert not ((t.sender == "centre1") & t.kind.str.endswith("update")).any()


def test_survival_undeclared_per_sample_rows_never_leave_the_centre():
    clients = _survival_clients()
    clients[2] = _survival_clients(_LeakyEvaluate)[2]
    led = Ledger()
    got = S.run_weights_averaging(clients, _init(), HP, MC, led)[0][0]
    assert not led.table().fields.str.contains("risk").any()  # filtered by the centre
    ref = S.run_weights_averaging(_survival_clients(), _init(), HP, MC, Ledger())[0][0]
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_array_equal(a, b)
    # the ledger of record still refuses such a message when it is handed one
    with pytest.raises(DisclosureError) as err:
        led.send("centre2", "server", {"loss_sum": 1.0, "n_events": 5, "risk": np.zeros(30)},
                 0, "evaluate", protocol=S.EVALUATE, downlink=False)  # fmt: skip
    assert (err.value.center, err.value.rule) == ("centre2", "declared-fields-only")
    # centre-scored CV (issue 22): the held-out centre answers two pair counts, no patient row
    led = Ledger()
    c = clients[0]
    px = LedgerClientProxy(c.cid, c, led)
    got = px.call("cv_concordance", S.pack_model([(_init(), 1.0)]), 0, "cv", S.CV_CONCORDANCE,
                  S.CV_REQUEST)  # fmt: skip
    assert set(got) == {"concordant", "comparable", "n"} and got["n"] == c.n
    with pytest.raises(DisclosureError, match="no-per-sample-rows"):
        bad = S.LOCAL_MODEL.__class__("x", {"risk": "per_sample", "n": "count"})
        led.send(c.cid, "server", {"risk": c.t_np, "n": 30}, 0, "cv", protocol=bad)


def test_survival_local_model_too_small_abstains():
    """A local model behind fewer patients than the floor is refused at the centre: the centre
    abstains (the ledger says so) and the ensemble is the other centres' models, reweighted."""

    class Tiny(S.SurvivalClient):
        def local_model(self, init, hp):
            return {**super().local_model(init, hp), "n": 1}

    clients = _survival_clients()
    clients[0] = _survival_clients(Tiny)[0]
    led = Ledger()
    model = S.train_strategy("ensemble", clients, _init(), HP, MC, led, None)
    ab = led.abstentions()
    assert ab[["center", "protocol"]].values.tolist() == [["centre0", "survival_local_model"]]
    assert len(model) == len(clients) - 1 and sum(w for _, w in model) == pytest.approx(1.0)
    assert set(led.messages().sender) - {"server"} == {c.cid for c in clients[1:]}
    with pytest.raises(InputDataError, match="every centre abstained"):
        S.train_strategy("ensemble", [clients[0]], _init(), HP, MC, Ledger(), None)


# ---------------------------------------------------------------- FedCRef
TINY = FedCRefParams(hidden=(8, 4), epochs=2, batch_size=4, lr=1e-2, patience=None, rounds=2,
                     first_epochs=1, later_epochs=2)  # fmt: skip


def _fcr_clients(cls=Client, n=10):
    g = np.random.default_rng(0)
    out = []
    for i in range(2):
        y = np.repeat([0, 1], n)
        x = np.clip(g.normal(0.3 + 0.4 * y[:, None], 0.1, size=(2 * n, 16)), 0, 1)
        out.append(cls(i, f"c{i:03d}", x.astype(np.float32), oracle_partition(y), 2, TINY, 5))
    return out


def test_fedcref_group_round_loop_equals_plain_fedavg():
    from fedclust.fedcref.algorithm import hash_seed
    from fedclust.fedcref.model import get_parameters as ae_params
    from fedclust.fedcref.model import make_ae

    led = Ledger()
    got = train_group(_fcr_clients(), [(0, 1), (1, 1)], TINY, 5, "G0", led, 1)
    clients = _fcr_clients()
    params = ae_params(make_ae(16, TINY.hidden, hash_seed(5, "G0")))
    for rnd in (1, 2):
        cfg = {"group": "G0", "epochs": 1 if rnd < 2 else 2}
        params = weighted_average([c.fit(params, {**cfg, "cluster": 1})[:2] for c in clients])
    for a, b in zip(got, params, strict=True):
        np.testing.assert_array_equal(a, b)
    t = led.table()
    assert set(t["protocol"]) == {"fedcref_group_fit"}
    assert t.kind.value_counts().to_dict() == {"group_global": 4, "group_update": 4}


def test_fedcref_empty_update_and_per_sample_rows_raise():
    class Empty(Client):
        def fit(self, parameters, config):
            return super().fit(parameters, config)[0], 0, {}

    clients = _fcr_clients()
    clients[1] = _fcr_clients(Empty)[1]
    led = Ledger()
    train_group(clients, [(0, 1), (1, 1)], TINY, 5, "G0", led, 1)
    a = led.abstentions()  # refused at the centre (an update over 0 samples), recorded
    assert set(a.center) == {"c001"} and len(a) == TINY.rounds
    assert all("refused" in r for r in a.reason)
    c = clients[0]
    leak = {"parameters": [np.zeros(3)], "n": 10, "errors": np.zeros(10)}  # per-sample errors
    with pytest.raises(DisclosureError) as err:
        Ledger().send(c.cid, "server", leak, 1, "group_update", protocol=GROUP_FIT)
    assert (err.value.center, err.value.rule) == ("c000", "declared-fields-only")


# ---------------------------------------------------------------- ADMM
def _admm_blocks(sizes=(40, 3, 30), d=4):
    g = np.random.default_rng(1)
    beta = g.normal(size=d)
    out = []
    for i, n in enumerate(sizes):
        A = np.hstack([g.normal(size=(n, d - 1)), np.ones((n, 1))])
        out.append((f"c{i}", A, A @ beta + 0.1 * g.normal(size=n)))
    return out


def test_admm_protocols_same_numbers_and_small_center_abstains():
    """A 3-row center is below the model's floor (d / nfilter_glm rows, issue 22): it abstains,
    recorded, and ADMM on the others converges to the one-data-holder solution of their rows."""
    s = M.AdmmSettings("ridge", 0.1, max_iter=20, eps_abs=None)
    led = Ledger()
    res = M.admm_distributed(_admm_blocks(), s, led, min_samples=3)
    kept = [blk for blk in _admm_blocks() if blk[0] != "c1"]
    A = np.vstack([a for _, a, _ in kept])
    b = np.concatenate([y for *_, y in kept])
    cen = M.admm_centralized(A, b, s)  # one data holder: consensus ADMM converges to it
    np.testing.assert_allclose(res.z, cen.z, atol=1e-3)
    assert set(led.messages()["protocol"]) == {p.name for p in ADMM_PROTOCOLS}
    assert list(led.abstentions()["center"]) == ["c1"]
    assert "c1" not in set(led.messages()["sender"])
    # admm.min_samples can only raise the floor: 35 rows leave c2 out as well
    led = Ledger()
    M.admm_distributed(_admm_blocks(), s, led, min_samples=35)
    assert list(led.abstentions()["center"]) == ["c1", "c2"]


def test_admm_center_sending_rows_never_reaches_the_server(monkeypatch):
    """A centre whose x-update also returns its rows: the centre-side guard keeps only the
    protocol's declared fields (issue 22), so the rows never leave it."""
    orig = M.AdmmCentre.local_update

    def leaky(self, parameters, config):
        return {**orig(self, parameters, config), "b": self.b.copy()}

    monkeypatch.setattr(M.AdmmCentre, "local_update", leaky)
    s = M.AdmmSettings("ridge", 0.1, max_iter=3, eps_abs=None)
    led = RecordingLedger()
    M.admm_distributed(_admm_blocks(), s, led)
    ups = led.received(protocol="admm_local_update")
    assert ups and all(set(m) == {"x", "w", "n"} for _, m in ups)
