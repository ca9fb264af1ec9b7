"""Flower deployment on localhost (issue 30 B.1–B.5, issue 22 item 7): one SuperLink session,
secured as real sites run it — TLS with an openssl-made CA, SuperNode authentication (keys
registered with ``flwr supernode register``), in-memory state, no runtime dependency
installation — and one SuperNode per centre holding only that centre's folder. Several stages
run on the session (DEC stages A–C, survival Weights Averaging, heart FL), each equal bit for
bit to the same stage in-process with the centres built from the same files; then a centre
that fails, a SuperNode killed mid-run under a FedAvg protocol with ``min_available`` (the run
goes on, the ledger records the drop) and under an exact protocol (the run stops naming the
site and the round), and a SuperNode with ``--trusted-entities`` refusing an unsigned app
bundle. Every process is killed at the end."""

from __future__ import annotations

import os
import shutil
import signal

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("flwr")
if not (shutil.which("openssl") and shutil.which("ssh-keygen")):  # pragma: no cover
    pytest.skip("the secure recipe needs openssl and ssh-keygen", allow_module_level=True)

from test_deployment import HEART, SURVIVAL, dec_setup, heart_centres, survival_centres

from fedclust import deployment
from fedclust.flower.localhost import LocalFederation, RunFailed, make_trusted_entities

COLS = ["round", "sender", "receiver", "kind", "protocol", "fields", "floats"]


@pytest.fixture(scope="module")
def site(tmp_path_factory, dec_toy_cfg, toy_blobs):
    """Three sites' folders (dec.npz, survival.npz, heart.npz each) and the stages' params."""
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
    return root, folders, {"dec": dec_params, "survival": {**SURVIVAL, "hp": {**SURVIVAL["hp"],
                           "fe": 1}}, "heart": {**HEART, "rounds": 1}}  # fmt: skip


@pytest.fixture(scope="module")
def fed(site):
    root, folders, _ = site
    with LocalFederation(root / "run", folders, secure=True, timeout=400) as f:
        yield f


def _same(got: dict, ref: dict) -> None:
    for k, v in ref.items():
        if k == "ledger":
            pd.testing.assert_frame_equal(got[k][COLS], v[COLS].astype(got[k][COLS].dtypes))
        elif isinstance(v, pd.DataFrame):
            pd.testing.assert_frame_equal(got[k], v, check_exact=False, rtol=0, atol=1e-12)
        elif isinstance(v, list | tuple) and v and isinstance(v[0], np.ndarray):
            assert all(np.array_equal(a, b) for a, b in zip(got[k], v, strict=True)), k
        elif isinstance(v, np.ndarray):
            assert np.array_equal(got[k][0], v), k


@pytest.mark.parametrize("stage", ["dec", "survival", "heart"])
def test_stage_on_the_deployment_equals_inprocess(fed, site, stage):
    _, folders, params = site
    got = fed.run(stage, params[stage])
    ref = deployment.run(stage, folders, params[stage])
    assert got["done"]["messages"] == len(ref["ledger"]) and got["done"]["dropped"] == {}
    _same(got, ref)


def test_a_centre_that_fails_stops_the_run_with_its_own_error(fed, site):
    _, _, params = site
    with pytest.raises(RunFailed, match=r"centre 'h0' \(SuperNode \d+\) failed on train in "
                       r"round 1: .*ValueError.*range"):  # fmt: skip
        fed.run("heart", {**params["heart"], "batch_size": 0}, timeout=120)


def test_fedavg_goes_on_when_a_supernode_is_killed_and_records_the_drop(fed, site):
    _, _, params = site
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
    _, _, params = site

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
    root, folders, params = site
    trusted = make_trusted_entities(root / "trusted")
    fed.add_node(3, folders[0], ["--trusted-entities", str(trusted)])
    with pytest.raises(RunFailed, match="(?i)could not be verified"):
        fed.run("heart", params["heart"], centres=2, timeout=120)


@pytest.mark.skipif(
    not os.environ.get("FEDCLUST_FLOWER_10"),
    reason="10 SuperNodes: minutes on 2 cores; FEDCLUST_FLOWER_10=1 runs it",
)
def test_ten_supernodes_with_in_memory_state(tmp_path, dec_toy_cfg, toy_blobs):
    """Issue 30 B.4: SQLite state (``--database``) lost replies under 10 SuperNodes; the
    in-memory state the recipe uses carries a DEC run (stages A–C) of 10 centres, equal to
    in-process. Measured numbers: README / docs/ARCHITECTURE.md."""
    cfg, _, params, dirs = dec_setup(tmp_path / "sites", dec_toy_cfg, toy_blobs, n_centres=10)
    params = {**params, "ae_rounds": 1, "dec_rounds": 1}
    with LocalFederation(tmp_path / "run", dirs, secure=True, timeout=900) as f:
        got = f.run("dec", params)
    ref = deployment.run("dec", dirs, params)
    assert len(got["done"]["centres"]) == 10 and got["done"]["messages"] == len(ref["ledger"])
    _same(got, ref)
