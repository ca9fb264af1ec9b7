"""Consensus ADMM (seed 003 §2): library references, invariants, the privacy boundary, bad input."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.linear_model import Lasso, LogisticRegression

from fedclust.admm import admm as M
from fedclust.admm import data as D
from fedclust.admm import pipeline as PL
from fedclust.admm import problems as P
from fedclust.admm import reference as R
from fedclust.admm import workflow as WF
from fedclust.config import defaults_at, load_yaml, validate_config
from fedclust.errors import ConfigError, DisclosureError, InputDataError
from fedclust.federation import Ledger

TIGHT = {"eps_abs": 1e-9, "eps_rel": 1e-9}


@pytest.fixture(scope="module")
def regression():
    X, y = load_diabetes(return_X_y=True)
    A, _ = D.pooled_blocks(X, y, "ridge")
    return A, y / 100.0  # not centred: the bias matters


@pytest.fixture(scope="module")
def classification():
    X, y = load_breast_cancer(return_X_y=True)
    rows = np.random.default_rng(0).choice(len(y), 200, replace=False)
    A, b = D.pooled_blocks(X[rows][:, :8], np.where(y[rows] == 1, 1.0, -1.0), "logistic")
    return A, b


def _blocks(A, b, k):
    return [(f"c{i}", A[i::k], b[i::k]) for i in range(k)]


# ---- references -------------------------------------------------------------------------------


@pytest.mark.parametrize("pen", [True, False])
def test_ridge_matches_closed_form(regression, pen):
    A, b = regression
    lam = 0.1
    x_ref = R.ridge(A, b, lam, pen)
    # the closed form is a stationary point of (3.3)
    mask = np.ones(A.shape[1])
    mask[-1] = float(pen)
    grad = (2 / len(b)) * A.T @ (A @ x_ref - b) + lam * mask * x_ref
    assert np.abs(grad).max() < 1e-12
    s = M.AdmmSettings("ridge", lam, rho=1.0, max_iter=2000, penalize_bias=pen, **TIGHT)
    cen = M.admm_centralized(A, b, s)
    dis = M.admm_distributed(_blocks(A, b, 4), s)
    assert cen.converged and dis.converged
    np.testing.assert_allclose(cen.z, x_ref, atol=1e-6)
    np.testing.assert_allclose(dis.z, x_ref, atol=1e-6)
    if not pen:  # unpenalised bias = mean of y on standardised inputs
        assert x_ref[-1] == pytest.approx(b.mean(), abs=1e-10)


@pytest.mark.parametrize("pen", [True, False])
def test_lasso_matches_sklearn_with_objective_matched(regression, pen):
    A, b = regression
    lam = 0.05
    if pen:  # bias as an explicit (penalised) column
        sk = Lasso(alpha=lam / 2, fit_intercept=False, tol=1e-12, max_iter=100_000).fit(A, b).coef_
    else:
        m = Lasso(alpha=lam / 2, tol=1e-12, max_iter=100_000).fit(A[:, :-1], b)
        sk = np.append(m.coef_, m.intercept_)
    s = M.AdmmSettings("lasso", lam, rho=1.0, max_iter=2000, penalize_bias=pen, **TIGHT)
    for res in (M.admm_centralized(A, b, s), M.admm_distributed(_blocks(A, b, 3), s)):
        np.testing.assert_allclose(res.z, sk, atol=1e-6)
        f_sk = P.objective("lasso", A, b, sk, lam, pen)
        assert res.objective == pytest.approx(f_sk, rel=1e-9)
    assert np.sum(np.abs(sk) < 1e-10) >= 1  # the L1 penalty really zeroes coefficients


@pytest.mark.parametrize("pen", [True, False])
def test_logistic_matches_sklearn_with_C_matched(classification, pen):
    A, b = classification
    lam = 0.02
    C = 1.0 / (lam * len(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        if pen:
            m = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=10_000).fit(A, b)
            sk = m.coef_.ravel()
        else:
            m = LogisticRegression(C=C, tol=1e-12, max_iter=10_000).fit(A[:, :-1], b)
            sk = np.append(m.coef_.ravel(), m.intercept_)
    s = M.AdmmSettings("logistic", lam, rho=0.05, max_iter=2000, penalize_bias=pen, **TIGHT)
    for res in (M.admm_centralized(A, b, s), M.admm_distributed(_blocks(A, b, 4), s)):
        np.testing.assert_allclose(res.z, sk, atol=2e-5)
    np.testing.assert_allclose(R.logistic(A, b, lam, pen), sk, atol=1e-8)


@pytest.mark.parametrize("pen", [True, False])
def test_svm_matches_scipy_solve_of_same_objective(classification, pen):
    A, b = classification
    A, b = A[:120], b[:120]
    lam = 0.05
    x_qp = R.svm_primal_slsqp(A, b, lam, pen)  # the objective as a QP, SLSQP
    f_qp = P.objective("svm", A, b, x_qp, lam, pen)
    x_dual = R.svm(A, b, lam, pen)
    np.testing.assert_allclose(x_dual, x_qp, atol=1e-6)
    s = M.AdmmSettings("svm", lam, rho=0.05, max_iter=3000, penalize_bias=pen, **TIGHT)
    for res in (M.admm_centralized(A, b, s), M.admm_distributed(_blocks(A, b, 3), s)):
        np.testing.assert_allclose(res.z, x_qp, atol=1e-4)
        assert res.objective == pytest.approx(f_qp, rel=1e-6)


def test_svm_subgradient_algorithm2_gets_close(classification):
    """D6.2's literal x-update (n_sub subgradient steps of size μ) is inexact but converges near."""
    A, b = classification
    lam = 0.05
    f_star = P.objective("svm", A, b, R.svm(A, b, lam), lam)
    s = M.AdmmSettings("svm", lam, rho=0.05, max_iter=300, svm_method="subgradient",
                       svm_step=0.5, svm_substeps=20)  # fmt: skip
    res = M.admm_distributed(_blocks(A, b, 4), s)
    f0 = P.objective("svm", A, b, np.zeros(A.shape[1]), lam)
    assert res.objective < f_star + 0.02 * (f0 - f_star)
    assert res.objective >= f_star - 1e-9


# ---- invariants -------------------------------------------------------------------------------


@pytest.mark.parametrize("problem", P.PROBLEMS)
def test_one_block_equals_centralized(regression, classification, problem):
    A, b = classification if problem in P.CLASSIFICATION else regression
    s = M.AdmmSettings(problem, 0.05, rho=0.1, max_iter=40, eps_abs=None)
    cen = M.admm_centralized(A, b, s)
    dis = M.admm_distributed([("only", A, b)], s)
    assert cen.iterations == dis.iterations == 40
    np.testing.assert_allclose(dis.z, cen.z, rtol=0, atol=1e-10)
    cols = ["objective", "primal_residual", "dual_residual"]
    np.testing.assert_allclose(dis.history[cols], cen.history[cols], rtol=1e-9, atol=1e-12)


def test_node_scaling_is_centralized_with_lambda_over_blocks(regression):
    """D6.2 (3.34): per-node 1/n_i with equal nodes = the centralized problem with λ/N_b."""
    A, b = regression
    A, b = A[:440], b[:440]  # 4 equal blocks of 110
    lam, k = 0.2, 4
    node = M.AdmmSettings("ridge", lam, rho=1.0, max_iter=3000, scaling="node", **TIGHT)
    res = M.admm_distributed(_blocks(A, b, k), node)
    np.testing.assert_allclose(res.z, R.ridge(A, b, lam / k), atol=1e-6)
    assert np.abs(res.z - R.ridge(A, b, lam)).max() > 1e-3  # and differs from the λ problem


def test_z_updates_are_the_published_formulas():
    rng = np.random.default_rng(1)
    xs, ws = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
    msgs = [{"x": x, "w": w} for x, w in zip(xs, ws, strict=True)]
    lam, rho = 0.3, 0.7
    svm = M.server_z_update(msgs, M.AdmmSettings("svm", lam, rho=rho))
    np.testing.assert_allclose(svm, rho * (xs + ws).sum(0) / (lam + 3 * rho))  # (3.40)
    lasso = M.server_z_update(msgs, M.AdmmSettings("lasso", lam, rho=rho))
    v, kappa = (xs + ws).mean(0), lam / (3 * rho)
    np.testing.assert_allclose(lasso, np.sign(v) * np.maximum(np.abs(v) - kappa, 0))
    # unpenalised bias: copied from x̄ + w̄
    ridge = M.server_z_update(msgs, M.AdmmSettings("ridge", lam, rho=rho, penalize_bias=False))
    assert ridge[-1] == pytest.approx(v[-1]) and abs(ridge[0]) < abs(v[0])


def test_stopping_rule(regression):
    A, b = regression
    s = M.AdmmSettings("ridge", 0.1, rho=1.0, max_iter=500, eps_abs=1e-5, eps_rel=1e-4)
    res = M.admm_distributed(_blocks(A, b, 4), s)
    last = res.history.iloc[-1]
    assert res.converged and res.iterations < 500
    assert last.primal_residual <= last.eps_pri and last.dual_residual <= last.eps_dual
    prev = res.history.iloc[-2]
    assert prev.primal_residual > prev.eps_pri or prev.dual_residual > prev.eps_dual
    fixed = M.admm_centralized(A, b, M.AdmmSettings("ridge", 0.1, max_iter=17, eps_abs=None))
    assert fixed.iterations == 17 and not fixed.converged


# ---- the privacy boundary ---------------------------------------------------------------------


def test_messages_through_ledger_and_nothing_row_level(regression):
    A, b = regression
    X = A[:, :-1] * 3 + 1  # raw-ish inputs: standardised with federated moments
    centers = np.array([f"c{i % 4}" for i in range(len(b))])
    names = ["c0", "c1", "c2", "c3"]
    s = M.AdmmSettings("ridge", 0.1, max_iter=10, eps_abs=None)
    led = Ledger()
    centres = M.centres_from_rows(X, b, centers, names, s)
    res = M.admm_federated(centres, s, led)
    # the centres' designs (from federated moments) are the pooled standardised rows
    A_pool, b_pool = D.pooled_blocks(X, b, "ridge")
    order = np.concatenate([np.flatnonzero(centers == c) for c in names])
    np.testing.assert_allclose(np.vstack([c.A for c in centres]), A_pool[order], atol=1e-12)
    np.testing.assert_allclose(np.concatenate([c.b for c in centres]), b_pool[order], atol=1e-12)
    # ... and equal the data module's round-0 blocks, so the run is admm_distributed's on them
    blocks = D.federated_blocks(X, b, centers, names, "ridge", Ledger())
    ref = M.admm_distributed(blocks, s)
    np.testing.assert_array_equal(res.z, ref.z)
    pd.testing.assert_frame_equal(res.history, ref.history)
    t = led.table()
    d = A.shape[1]
    per_kind = t[t["round"] == 0].groupby("kind").size().to_dict()
    assert per_kind == {"standardize_request": 4, "standardize": 4, "design_request": 4,
                        "design": 4}  # fmt: skip
    assert set(t[t["kind"] == "standardize"]["fields"]) == {"n,sum,sumsq"}
    assert set(t[t["kind"] == "design_request"]["fields"]) == {"mean,n_total,sd,y_mean,y_sd"}
    per_round = t[t["round"] > 0].groupby("kind").size().to_dict()
    assert per_round == {"local_update_request": 40, "local_update": 40,
                         "objective_request": 40, "objective": 40}  # fmt: skip
    assert (t[t["kind"] == "local_update_request"]["floats"] == 0).all()  # the centre holds z_k
    upd = t[t["kind"] == "local_update"]
    # x_i, w_i and the center's sample count n_i (the core's count rule)
    assert set(upd["fields"]) == {"n,w,x"} and (upd["floats"] == 2 * d + 1).all()
    assert (t[t["kind"] == "objective"]["floats"] == 2).all()
    assert set(t[t["kind"] == "objective_request"]["fields"]) == {"z"}
    assert set(t["protocol"]) == {
        "admm_standardize_request", "admm_standardize", "admm_design", "admm_design_ack",
        "admm_local_update_request", "admm_local_update", "admm_consensus", "admm_objective",
    }  # fmt: skip
    assert t["floats"].max() < 110  # no message carries a center's rows (≥ 110 samples each)
    assert res.ledger is led


def test_centre_answers_only_its_declared_methods_and_the_server_sees_messages(regression):
    from fedclust.federation import LedgerClientProxy

    A, b = regression
    s = M.AdmmSettings("ridge", 0.1, max_iter=3, eps_abs=None)
    c = M.AdmmCentre("c0", A[:120, :-1], b[:120], s)
    led = Ledger()
    proxy = LedgerClientProxy("c0", c, led)
    # a request for anything but the declared methods (e.g. the rows) is refused, recorded
    assert proxy.call("__dict__", {}, 0, "steal", M.LOCAL_UPDATE, M.LOCAL_REQUEST) is None
    assert led.n_abstentions == 1 and "declared" in led.abstentions()["reason"].iloc[0]
    # the centre answers under its own protocol: a server offering another one for the moments
    # gets the moments, which its ledger of record then refuses as undeclared fields
    with pytest.raises(DisclosureError, match="declared-fields-only"):
        proxy.call("moments", {}, 0, "standardize", M.LOCAL_UPDATE, M.MOMENTS_REQUEST)
    out = proxy.call("moments", {}, 0, "standardize", D.STANDARDIZE, M.MOMENTS_REQUEST)
    assert set(out) == {"n", "sum", "sumsq"} and out["n"] == 120


# ---- pipeline (MDS-like task from files) --------------------------------------------------------


def _mds_files(tmp_path, n=160):
    rng = np.random.default_rng(3)
    ids = [f"P{i}" for i in range(n)]
    X = pd.DataFrame(rng.integers(0, 2, size=(n, 6)).astype(float), index=ids,
                     columns=[f"g{j}" for j in range(6)])  # fmt: skip
    X["const"] = 0.0  # a constant column is kept (SD 1), coefficient 0 under the penalty
    status = (X["g0"] + rng.random(n) > 1.0).astype(float)
    obs = pd.DataFrame({"OS_STATUS": status, "label": "x"}, index=ids)
    obs.loc["P0", "OS_STATUS"] = np.nan
    split = pd.DataFrame({"sample_id": ids, "center": [f"c{i % 8:02d}" for i in range(n)]})
    f, o, s = tmp_path / "features.parquet", tmp_path / "obs.tsv", tmp_path / "equal8.tsv"
    X.to_parquet(f)
    obs.to_csv(o, sep="\t")
    split.to_csv(s, sep="\t", index=False)
    return str(f), str(o), str(s)


def _cfg(**over):
    """An ``admm`` section as the config loader fills it (schema defaults under ``over``)."""
    return defaults_at(over, ["admm"])


def _task(**task):
    """An ``admm.tasks`` entry with its schema defaults."""
    return defaults_at(task, ["admm", "tasks", "*"])


def test_pipeline_mds_task_both_modes(tmp_path, monkeypatch):
    # 159 patients over 8 centres of ~20 rows: below the default glm floor for this model;
    # the test is about the pipeline, so its centres accept it (issue 22's floors tested apart)
    from fedclust.federation import disclosure

    monkeypatch.setattr(disclosure, "_CONFIGURED", {"default": {"nfilter_glm": 10.0}})
    f, o, s = _mds_files(tmp_path)
    cfg = _cfg(rho=0.1, max_iter=500, eps_abs=1e-8, eps_rel=1e-8)
    task = _task(problem="logistic", dataset="mds", lam=0.05, outcome="OS_STATUS", positive=1)
    data = PL.load_task(cfg, task, 1, "t", features=f, obs=o, split=s)
    assert len(data.y) == 159 and set(data.y) == {-1.0, 1.0} and len(data.names) == 8
    infos = {m: PL.run_job(cfg, task, m, data)[1] for m in PL.MODES}
    for info in infos.values():
        assert abs(info["relative_gap"]) < 1e-6 and info["max_abs_coef_diff"] < 1e-4
    assert infos["distributed"]["centers"] == 8 and infos["distributed"]["messages"] > 0
    assert infos["centralized"]["messages"] == 0


def test_sklearn_task_split_is_seeded():
    cfg = _cfg(n_blocks=3)
    task = _task(problem="ridge", dataset="diabetes", lam=0.1)
    a, b = PL.load_task(cfg, task, 7, "t"), PL.load_task(cfg, task, 7, "t")
    np.testing.assert_array_equal(a.centers, b.centers)
    assert sorted(pd.Series(a.centers).value_counts()) == [147, 147, 148]


@pytest.mark.parametrize("problem,lam", [("ridge", 0.1), ("lasso", 0.05)])
def test_boston_housing_d62_data_reaches_the_library_optimum(problem, lam):
    """Issue 28 item 10: D6.2's own regression set (Boston housing, mlxtend) over 4 centres;
    ridge against the closed form, LASSO against scikit-learn's Lasso (alpha = lambda/2)."""
    from sklearn.linear_model import Lasso

    cfg = _cfg(n_blocks=4, max_iter=2000, eps_abs=1e-9, eps_rel=1e-9)
    task = _task(problem=problem, dataset="boston", lam=lam)
    data = PL.load_task(cfg, task, 0, "t")
    assert data.X.shape == (506, 13) and data.y[:3].tolist() == [24.0, 21.6, 34.7]
    assert "Boston" in data.source or "boston" in data.source
    A, b = D.pooled_blocks(data.X, data.y, problem)
    if problem == "ridge":
        ref = np.linalg.solve(2 / 506 * A.T @ A + lam * np.eye(14), 2 / 506 * A.T @ b)
    else:
        ref = Lasso(alpha=lam / 2, fit_intercept=False, tol=1e-12, max_iter=100_000).fit(A, b).coef_
    for mode in PL.MODES:
        _, info = PL.run_job(cfg, task, mode, data)
        assert info["max_abs_coef_diff"] < 1e-5 and abs(info["relative_gap"]) < 1e-8
        assert np.abs(info["reference_x"] - ref).max() < 1e-8


# ---- bad input --------------------------------------------------------------------------------


def test_bad_input_errors(regression, classification, tmp_path):
    A, b = regression
    with pytest.raises(ConfigError, match="rho"):
        M.AdmmSettings("ridge", 0.1, rho=0.0)
    with pytest.raises(ConfigError, match="rho"):
        M.AdmmSettings("ridge", 0.1, rho=-1.0)
    with pytest.raises(ConfigError, match="rho"):
        M.AdmmSettings("ridge", 0.1, rho=float("nan"))
    with pytest.raises(ConfigError, match="unknown ADMM problem 'elasticnet'"):
        M.AdmmSettings("elasticnet", 0.1)
    with pytest.raises(ConfigError, match="lambda"):
        M.AdmmSettings("ridge", -0.1)
    with pytest.raises(ConfigError, match="scaling"):
        M.AdmmSettings("ridge", 0.1, scaling="mean")
    with pytest.raises(ConfigError, match="svm x-update"):
        M.admm_centralized(*classification, M.AdmmSettings("svm", 0.1, svm_method="newton"))
    s = M.AdmmSettings("ridge", 0.1, max_iter=3)
    bad = A.copy()
    bad[3, 2] = np.nan
    with pytest.raises(InputDataError, match="non-finite"):
        M.admm_centralized(bad, b, s)
    with pytest.raises(InputDataError, match="non-finite.*\n.*center c1"):
        M.admm_distributed([("c0", A, b), ("c1", bad, b)], s)
    binf = b.copy()
    binf[0] = np.inf
    with pytest.raises(InputDataError, match="non-finite"):
        M.admm_centralized(A, binf, s)
    with pytest.raises(InputDataError, match="labels in"):
        M.admm_centralized(A, b, M.AdmmSettings("logistic", 0.1))
    with pytest.raises(InputDataError, match="at least one center"):
        M.admm_distributed([], s)
    with pytest.raises(InputDataError, match="no samples"):
        D.federated_blocks(A[:, :-1], b, np.array(["c0"] * len(b)), ["c0", "c1"], "ridge", Ledger())
    f, o, sp = _mds_files(tmp_path)
    ridge = _task(problem="ridge", dataset="diabetes", lam=0.1)
    data = PL.load_task(_cfg(), ridge, 1, "t")
    with pytest.raises(ConfigError, match="unknown ADMM mode"):
        PL.run_job(_cfg(), ridge, "gossip", data)
    with pytest.raises(ConfigError, match="unknown ADMM dataset 'housing'"):
        PL.load_task(_cfg(), _task(problem="ridge", dataset="housing", lam=0.1), 1, "t")
    with pytest.raises(InputDataError, match="outcome column 'AML'"):
        PL.load_task(_cfg(), _task(problem="logistic", dataset="mds", lam=0.1, outcome="AML"),
                     1, "t", features=f, obs=o, split=sp)  # fmt: skip
    with pytest.raises(InputDataError, match="both classes"):
        PL.load_task(_cfg(), _task(problem="logistic", dataset="mds", lam=0.1, positive=7),
                     1, "t", features=f, obs=o, split=sp)  # fmt: skip


def test_config_admm_section(repo):
    cfg = validate_config(load_yaml(repo / "config" / "config.yaml"))
    WF.check_tasks(cfg["admm"], cfg["data"])
    bad = copy.deepcopy(cfg)
    bad["admm"]["rho"] = 0
    with pytest.raises(ConfigError, match="rho"):
        validate_config(bad, repo / "config" / "schema.yaml")
    bad = copy.deepcopy(cfg)
    bad["admm"]["tasks"]["x"] = {"problem": "elasticnet", "dataset": "diabetes", "lam": 1}
    with pytest.raises(ConfigError, match="elasticnet"):
        validate_config(bad, repo / "config" / "schema.yaml")
    bad = copy.deepcopy(cfg)
    bad["data"]["splits"].pop("equal8")
    with pytest.raises(ConfigError, match="equal8"):
        WF.check_tasks(bad["admm"], bad["data"])


def test_report_tables_and_figure(regression):

    from fedclust.admm import report as REP

    A, b = regression
    s = M.AdmmSettings("ridge", 0.1, max_iter=5, eps_abs=None)
    dis = M.admm_distributed(_blocks(A, b, 2), s)
    cen = M.admm_centralized(A, b, s)
    t = REP.message_table({("r", "distributed"): dis.ledger.table(),
                           ("r", "centralized"): cen.ledger.table()})  # fmt: skip
    got = {(r.kind, r.direction): (r.messages, r.floats) for r in t.itertuples()}
    d = A.shape[1]
    assert got == {("standardize_request", "server->center"): (2, 0),
                   ("standardize", "center->server"): (2, 2),
                   ("design_request", "server->center"): (2, 2),
                   ("design", "center->server"): (2, 2),
                   ("local_update_request", "server->center"): (10, 0),
                   ("local_update", "center->server"): (10, 10 * (2 * d + 1)),
                   ("objective_request", "server->center"): (10, 10 * d),
                   ("objective", "center->server"): (10, 20)}  # fmt: skip
    fig = REP.convergence_figure("r", {"centralized": cen.history, "distributed": dis.history},
                                 cen.objective)  # fmt: skip
    assert len(fig.axes) == 3 and len(fig.axes[0].lines) == 2
