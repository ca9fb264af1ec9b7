"""Reliability probes of a deployed site's files (issue 30 C, the kinds of items 1, 3, 8, 11 on
the newer deployment code): a centre file that is truncated, empty, another stage's, with NaNs
or wrong shapes, and a SuperNode's ``disclosure`` file that is missing, not YAML, flat, with
out-of-range floors or one that lowers the centre file's own floor. Each raises ConfigError /
InputDataError naming the file and the fix — never a bare traceback, never a lowered floor.
Tiny inputs, no Flower: the in-process run of the deployed stage."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from fedclust import deployment as D
from fedclust.errors import ConfigError, FedclustError, InputDataError
from fedclust.federation.disclosure import DisclosurePolicy, policy_from

EDGES = np.arange(0, 10.5, 0.5)


def _km(cid, rng, n=30, pol=None):
    from fedclust.survival.km import KMCentre

    t, e = rng.exponential(3, n), rng.random(n) < 0.7
    return KMCentre(cid, t, e, rng.choice(["a", "b"], n), EDGES, pol)


def _cox(cid, rng, n=40, pol=None):
    from fedclust.survival.coxph import CoxCentre

    return CoxCentre(cid, rng.normal(size=(n, 2)), rng.exponential(3, n), rng.random(n) < 0.7, pol)


@pytest.fixture
def km(tmp_path):
    from fedclust.survival import deployment as sd

    rng = np.random.default_rng(0)
    st = D.get("survival_km")
    pol = DisclosurePolicy(nfilter_tab=5)
    dirs = D.write_centres(st, [_km("A", rng, pol=pol), _km("B", rng)], tmp_path / "km")
    return st, dirs, sd.km_params({"step": 0.5, "max": 10.0}, ["a", "b"])


@pytest.fixture
def cox(tmp_path):
    rng = np.random.default_rng(1)
    st = D.get("survival_coxph")
    return st, D.write_centres(st, [_cox("A", rng), _cox("B", rng)], tmp_path / "cox")


def _edit(folder, st, **fields):
    """Rewrite one field of a centre file (None: drop it)."""
    f = folder / st.filename
    z = D.load_npz(f)
    z.update(fields)
    D.save_npz(f, **{k: v for k, v in z.items() if v is not None})


# ---------------------------------------------------------------- centre files
@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 truncated"])
def test_truncated_centre_file_is_named(km, content):
    st, dirs, params = km
    f = dirs[0] / st.filename
    f.write_bytes(content if content else b"")
    with pytest.raises(InputDataError, match="survival_km.npz") as err:
        D.run(st, dirs, params)
    assert "rewrite" in str(err.value)


def test_cut_centre_file_is_named(km):
    st, dirs, params = km
    f = dirs[0] / st.filename
    f.write_bytes(f.read_bytes()[:100])
    with pytest.raises(InputDataError, match="survival_km.npz"):
        D.run(st, dirs, params)


def test_another_stages_file_is_named(km, cox):
    kst, kdirs, params = km
    cst, cdirs = cox
    shutil.copy(cdirs[0] / cst.filename, kdirs[0] / kst.filename)
    with pytest.raises(InputDataError, match="groups") as err:
        D.run(kst, kdirs, params)
    assert "survival_km" in str(err.value)
    shutil.copy(kdirs[1] / kst.filename, cdirs[0] / cst.filename)
    with pytest.raises(InputDataError, match="'x'"):
        D.run(cst, cdirs, {})


def test_km_groups_of_another_length(km):
    st, dirs, params = km
    g = D.load_npz(dirs[0] / st.filename)["groups"]
    _edit(dirs[0], st, groups=g[:-5])
    with pytest.raises(InputDataError, match="group"):
        D.run(st, dirs, params)


def test_km_grid_not_increasing(km):
    st, dirs, params = km
    _edit(dirs[0], st, edges=EDGES[::-1])
    with pytest.raises(InputDataError, match="grid"):
        D.run(st, dirs, params)


def test_km_no_labels(km):
    st, dirs, params = km
    with pytest.raises(ConfigError, match="labels"):
        D.run(st, dirs, {**params, "labels": []})


def test_cox_nan_covariate_is_named(cox):
    """Before: 'did not converge in 100 Newton steps … separation' (the wrong cause)."""
    st, dirs = cox
    x = D.load_npz(dirs[0] / st.filename)["x"].copy()
    x[0, 0] = np.nan
    _edit(dirs[0], st, x=x)
    with pytest.raises(InputDataError, match="covariate"):
        D.run(st, dirs, {})


@pytest.mark.parametrize("cut", ["rows", "1d"])
def test_cox_covariates_of_another_shape(cox, cut):
    st, dirs = cox
    x = D.load_npz(dirs[0] / st.filename)["x"]
    _edit(dirs[0], st, x=x[:-3] if cut == "rows" else x[:, 0])
    with pytest.raises(InputDataError, match="covariate"):
        D.run(st, dirs, {})


@pytest.mark.parametrize("opts", [{"max_iter": 0}, {"tol": -1.0}])
def test_cox_options_out_of_range(cox, opts):
    st, dirs = cox
    with pytest.raises(ConfigError, match=next(iter(opts))):
        D.run(st, dirs, opts)


def test_centre_id_that_is_a_path(km):
    st, dirs, params = km
    _edit(dirs[0], st, cid="../../x")
    with pytest.raises(InputDataError, match="centre id"):
        D.run(st, dirs, params)


@pytest.mark.parametrize("text", ['{"nfilter_tab": 0}', "not json"])
def test_centre_file_policy_checked(km, text):
    st, dirs, params = km
    _edit(dirs[0], st, disclosure=text)
    with pytest.raises(FedclustError, match="nfilter_tab|disclosure"):
        D.run(st, dirs, params)


# ---------------------------------------------------------------- the site's disclosure file
def _load(km, text, tmp_path, centre=1):
    st, dirs, params = km
    site = tmp_path / "site.yaml"
    if text is not None:
        site.write_bytes(text if isinstance(text, bytes) else text.encode())
    return D.load_centre(st, dirs[centre], params, disclosure=site)


def test_disclosure_file_may_raise_a_floor(km, tmp_path):
    assert _load(km, "default: {nfilter_tab: 8}", tmp_path, 0).disclosure.nfilter_tab == 8
    pol = _load(km, "disclosure: {default: {nfilter_tab: 4}}", tmp_path).disclosure
    assert pol.nfilter_tab == 4


@pytest.mark.parametrize(
    "text", ["default: {nfilter_tab: 1}", "default: {nfilter_string: 50}"], ids=["lower", "reset"]
)
def test_disclosure_file_cannot_lower_the_centre_files_floor(km, tmp_path, text):
    """Centre A's file carries nfilter_tab 5; a disclosure file setting 1 (or leaving it out,
    which reset it to the default 3) lowered it silently."""
    with pytest.raises(ConfigError, match="nfilter_tab") as err:
        _load(km, text, tmp_path, 0)
    assert "site.yaml" in str(err.value)


def test_flat_disclosure_file_is_not_ignored(km, tmp_path):
    """`nfilter_tab: 10` without `default:` was read as no setting at all (floor 3)."""
    with pytest.raises(ConfigError, match="default"):
        _load(km, "nfilter_tab: 10", tmp_path)


@pytest.mark.parametrize(
    "value",
    ["0", "-4", "ten", "2.5", "null", "true", ".inf"],
)
def test_disclosure_floor_out_of_range(km, tmp_path, value):
    with pytest.raises(ConfigError, match="nfilter_tab"):
        _load(km, f"default: {{nfilter_tab: {value}}}", tmp_path)


def test_allow_per_sample_string_is_not_split_into_letters():
    with pytest.raises(ConfigError, match="allow_per_sample"):
        policy_from({"default": {"allow_per_sample": "km_counts"}})
    with pytest.raises(ConfigError, match="nfilter_glm"):
        policy_from({"default": {"nfilter_glm": 0}})


@pytest.mark.parametrize("text", [None, b"\x00\x01\xff", "default: [", "dir"],
                         ids=["missing", "binary", "bad-yaml", "dir"])  # fmt: skip
def test_unreadable_disclosure_file(km, tmp_path, text):
    st, dirs, params = km
    site = tmp_path if text == "dir" else tmp_path / "site.yaml"
    if text not in (None, "dir"):
        site.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError) as err:
        D.load_centre(st, dirs[1], params, disclosure=site)
    assert str(site) in str(err.value)


@pytest.mark.parametrize("cut", ["nan", "rows"])
def test_survival_centre_covariates_checked(cut):
    """A NaN covariate trained the Weights Averaging model on NaN without a word."""
    from fedclust.survival.strategies import SurvivalClient
    from fedclust.survival.train import ModelConfig

    rng = np.random.default_rng(2)
    x, t, e = rng.normal(size=(20, 3)), rng.exponential(3, 20), rng.random(20) < 0.7
    if cut == "nan":
        x[2, 1] = np.nan
    else:
        x = x[:-2]
    with pytest.raises(InputDataError, match="covariate"):
        SurvivalClient("A", x, t, e, ModelConfig(), 0)


def test_file_policy_of_every_stage_named(tmp_path):
    """The HAC stage read a centre file's policy with a bare json.loads (JSONDecodeError)."""
    f = tmp_path / "hac.npz"
    D.save_npz(f, x=np.zeros((3, 2)), disclosure="{broken")
    with pytest.raises(InputDataError, match="hac.npz"):
        D.file_policy(D.load_npz(f))
    D.save_npz(f, x=np.zeros((3, 2)), disclosure='{"nfilter_subset": 7}')
    assert D.file_policy(D.load_npz(f)).nfilter_subset == 7
