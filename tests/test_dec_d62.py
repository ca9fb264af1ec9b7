"""D6.2 ch. 7 through the DEC stage (issue 28 item 11): D6.2's noise model, UnitNorm, the client
split, the federated column frequencies, the G metric's terms, the HDP reference and the
parse-time unit list."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from fedclust.config import load_config_file, validate_config
from fedclust.dec.d62 import workflow as W
from fedclust.dec.d62.centre import D62Centre, random_flip, unit_norm_
from fedclust.dec.d62.experiment import Unit, client_parts, make_model_factory, run_unit
from fedclust.dec.d62.pooled import agreement
from fedclust.dec.model import set_parameters
from fedclust.errors import ConfigError

CFG = {
    "configurations": {"a": {"ae_epochs": 4, "dropout": 0.2, "flip": 0.2, "unit_norm": False},
                       "c": {"ae_epochs": 4, "dropout": 0.2, "flip": 0.2, "unit_norm": True}},
    "model": {"hidden": [8, 8, 12], "hidden_act": "relu", "init": "xavier"},
    "test_fraction": 0.2, "local_epochs": 2,
    "autoencoder": {"epochs": None, "optimizer": "sgd", "lr": 0.1, "batch_size": 64,
                    "loss": "bce"},
    "clustering": {"epochs": 4, "update_interval": 2, "optimizer": "sgd", "lr": 0.1,
                   "batch_size": 64},
    "kmeans_n_init": 3, "min_samples": 3, "min_cluster_size": 3,
}  # fmt: skip


def _binary(n=240, f=12, groups=3, seed=0) -> np.ndarray:
    """Planted groups: group g carries features g·(f/groups)… with probability 0.9."""
    g = np.random.default_rng(seed)
    lab = np.arange(n) % groups
    x = (g.random((n, f)) < 0.03).astype(np.float32)
    w = f // groups
    for i, c in enumerate(lab):
        x[i, c * w : (c + 1) * w] = (g.random(w) < 0.9).astype(np.float32)
    return x


# ------------------------------------------------------------------------ D6.2's noise model
def test_random_flip_redraws_from_the_column_frequency_not_a_flip():
    gen = torch.Generator().manual_seed(0)
    x = torch.ones(20000, 3)
    p1 = torch.tensor([1.0, 0.0, 0.3])
    out = random_flip(x, 1.0, p1, gen)
    # a redrawn entry of a column that is all ones (p1 = 1) stays 1: no flip
    assert out[:, 0].min() == 1 and out[:, 1].max() == 0
    assert abs(float(out[:, 2].mean()) - 0.3) < 0.02
    half = random_flip(torch.zeros(20000, 1), 0.5, torch.tensor([0.4]), gen)
    assert abs(float(half.mean()) - 0.5 * 0.4) < 0.02  # rate × p1 of the zeros become 1
    assert torch.equal(random_flip(x, 0.0, p1, gen), x)


def test_unit_norm_is_keras_unitnorm_axis0():
    make = make_model_factory(CFG, 12, 3, 0.0)
    tsae = make().tsae
    with torch.no_grad():
        for w in tsae.weights:
            w.mul_(3.0)
    unit_norm_(tsae)
    for w in tsae.weights:  # torch rows = Keras kernel columns (one per unit)
        np.testing.assert_allclose(w.norm(dim=1).detach().numpy(), 1.0, atol=1e-6)


def test_d62_client_split_sizes():
    assert [len(p) for p in client_parts(2043, 2, 0)] == [1021, 1022]
    assert [len(p) for p in client_parts(2043, 4, 0)] == [510, 510, 510, 513]
    assert [len(p) for p in client_parts(2043, 6, 0)] == [340] * 5 + [343]
    assert [len(p) for p in client_parts(2043, 8, 0)] == [255] * 7 + [258]
    parts = client_parts(2043, 8, 1)
    assert sorted(np.concatenate(parts)) == list(range(2043))
    with pytest.raises(ConfigError, match="clients"):
        client_parts(5, 6, 0)


# ------------------------------------------------------------------------ one unit end to end
def test_unit_federates_column_frequencies_and_keeps_unit_norm():
    x = _binary()
    res, curves, labels, ledger = run_unit(x, Unit("c", 3, 3), CFG, 7)
    assert res["client_sizes"] == "80 80 80" and len(labels) == len(x)
    # p1 from the centres' counts: one (1, F) row each, never a patient row
    ones = ledger[ledger["protocol"] == "d62_column_ones"]
    assert len(ones) == 3 and set(ledger["protocol"]) >= {"d62_fit", "d62_flip_rates",
                                                          "dec_kmeans"}  # fmt: skip
    # a centre whose local cluster is under min_cluster_size abstains from k-means only
    abst = ledger[ledger["kind"] == "abstain"]
    assert res["kmeans_senders"] + len(abst) == 3 and set(abst["protocol"]) <= {"dec_kmeans"}
    # G = train / held-out loss of the last round, as recorded per round
    last = curves[curves["stage"] == "ae"].iloc[-1]
    assert res["G_ae"] == pytest.approx(last["loss"] / last["eval_loss"])
    assert len(curves[curves["stage"] == "ae"]) == 2 and len(curves[curves["stage"] == "dec"]) == 2
    again, _, labels2, _ = run_unit(x, Unit("c", 3, 3), CFG, 7)
    assert again == res and np.array_equal(labels, labels2)  # deterministic


def test_centre_eval_loss_is_the_held_out_bce_and_p1_is_pooled():
    x = _binary(100)
    make = make_model_factory(CFG, x.shape[1], 3, 0.0)
    c = D62Centre("c0", x, make, seed=3, test_fraction=0.2)
    assert len(c.x) == 80 and len(c.x_test) == 20 and c.n_samples == 100
    msg = c.column_ones(None, {})
    np.testing.assert_allclose(msg["ones"] / msg["n"], x.mean(0, keepdims=True), rtol=1e-6)
    torch.manual_seed(0)
    init = [p.detach().numpy().copy() for p in make().tsae.state_dict().values()]
    c.flip_rates(None, {"p1": x.mean(0)})
    fit = {"stage": "ae", "optimizer": "sgd", "lr": 0.1, "batch_size": 32, "epochs": 1,
           "loss": "bce", "flip": 0.1, "unit_norm": True}  # fmt: skip
    params, n, m = c.fit(init, fit)
    tsae = make().tsae
    set_parameters(tsae, params)
    tsae.eval()
    xh = c.x_test.numpy()
    p = np.clip(tsae(c.x_test).detach().numpy(), 1e-6, 1 - 1e-6)
    ref = -np.mean(xh * np.log(p) + (1 - xh) * np.log(1 - p))
    assert n == 80 and m["eval_loss"] == pytest.approx(ref, rel=1e-5)
    for w in tsae.weights:
        np.testing.assert_allclose(w.norm(dim=1).detach().numpy(), 1.0, atol=1e-5)


# ------------------------------------------------------------------------ HDP reference
def test_hdp_recovers_planted_groups_and_agreement_scores():
    pytest.importorskip("tomotopy")
    from sklearn import metrics as skm

    from fedclust.dec.d62.pooled import fit_hdp, hdp_clusters

    x = _binary(300, 12, 3, seed=1)
    x[0] = 0  # a patient without any alteration: an empty document
    truth = np.arange(300) % 3
    res = fit_hdp(x, {"iterations": 200, "burn_in": 50, "initial_k": 2, "alpha": 0.1,
                      "eta": 0.01, "gamma": 0.1}, seed=5)  # fmt: skip
    assert res.empty_documents == 1 and np.allclose(res.theta.sum(1), 1)
    lab = hdp_clusters(res.theta, 3, seed=0)
    assert skm.adjusted_rand_score(truth[1:], lab[1:]) > 0.8
    a = agreement(truth, lab)
    assert a["ari"] == pytest.approx(skm.adjusted_rand_score(truth, lab))
    assert a["ami"] == pytest.approx(skm.adjusted_mutual_info_score(truth, lab))
    assert agreement(truth, truth) == {"ari": 1.0, "ami": 1.0, "nmi": 1.0}


# ------------------------------------------------------------------------ workflow
def test_units_of_the_configs_and_missing_tomotopy(repo, monkeypatch):
    from fedclust.config import SCHEMA, fill_defaults, load_yaml

    schema = load_yaml(SCHEMA)
    thesis = fill_defaults(load_config_file(repo / "config" / "thesis.yaml"), schema)
    d62 = thesis["dec"]["d62"]
    monkeypatch.setattr(W, "hdp_installed", lambda: True)
    units = W.units(d62)
    assert len(units) == 7 * 11 + 4 * 11 and "g_k12_n8" in units and W.fanout(d62) == "unit"
    default = validate_config(load_yaml(repo / "config" / "config.yaml"), source="config.yaml")
    assert W.units(default["dec"]["d62"]) == ["a_k6_n1", "c_k6_n1", "c_k6_n4"]
    assert [Unit.parse(u).clients for u in W.units(default["dec"]["d62"])] == [1, 1, 4]
    monkeypatch.setattr(W, "hdp_installed", lambda: False)
    assert not W.hdp_on(d62) and "tomotopy is not installed" in W.hdp_note(d62)
    with pytest.raises(ConfigError, match="Table 7.1"):
        run_unit(_binary(), Unit("z", 3, 1), CFG, 0)
    bad = {**CFG, "local_epochs": 3}
    with pytest.raises(ConfigError, match="multiples"):
        run_unit(_binary(), Unit("a", 3, 1), bad, 0)
    assert isinstance(pd.DataFrame(), pd.DataFrame)
