"""The federation core: the ledger's enforced privacy boundary (issue 13)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedclust.errors import DisclosureError, FedclustError
from fedclust.federation import Ledger, Protocol, abstention_summary

CENTROIDS = Protocol(
    "kmeans_centroids", {"centroids": "aggregate", "counts": "count"}, min_samples=10
)
MEAN = Protocol("mean", {"mean": "aggregate", "n": "count", "label": "metadata"}, min_samples=10)


ANY = Protocol("t_any", {"w": "parameters", "n": "count", "meta": "aggregate", "v": "aggregate"})


def test_a_message_without_a_protocol_is_refused():
    with pytest.raises(DisclosureError, match="every-message-has-a-protocol"):
        Ledger().send("c1", "server", {"n": 7}, 1, "update")


def test_send_deep_copies_and_counts():
    led = Ledger(protocol=ANY)
    w = np.arange(6.0).reshape(2, 3)
    nested = {"b": [np.ones(2), 3]}
    out = led.send("c1", "server", {"w": w, "n": 7, "meta": nested}, 1, "update")
    assert out["w"] is not w and np.shares_memory(out["w"], w) is False
    w[0, 0] = 99.0
    nested["b"][0][0] = 5.0
    assert out["w"][0, 0] == 0.0 and out["meta"]["b"][0][0] == 1.0
    assert led.n_messages == 1 and led.n_floats == 6 + 1 + 2 + 1
    row = led.table().iloc[0]
    assert (row["sender"], row["receiver"], row["kind"], row["round"]) == (
        "c1",
        "server",
        "update",
        1,
    )


@pytest.mark.parametrize(
    "value",
    [
        np.array(["a", "b"]),
        np.array([1, "x"], dtype=object),
        np.array([b"ab"]),
        np.zeros(2, dtype=[("a", "f8")]),
        "id,age\n1,70\n2,64",  # a whole CSV would have counted 0 floats before
        b"raw",
        pd.DataFrame({"x": [1.0]}),
        [np.ones(2), "label"],
    ],
)
def test_non_numeric_fields_rejected(value):
    led = Ledger(protocol=ANY)
    with pytest.raises(DisclosureError, match="numeric-only") as err:
        led.send("center_A", "server", {"v": value})
    assert isinstance(err.value, FedclustError) and isinstance(err.value, TypeError)
    assert err.value.center == "center_A" and err.value.rule == "numeric-only"
    assert led.n_messages == 0


def test_strings_only_in_declared_metadata():
    led = Ledger(protocol=MEAN)
    out = led.send("c1", "server", {"mean": np.ones(3), "n": 12, "label": "region 1"})
    assert out["label"] == "region 1" and led.table().iloc[0]["protocol"] == "mean"
    with pytest.raises(DisclosureError, match="numeric-only"):
        led.send("c1", "server", {"mean": np.array(["1.0"]), "n": 12})


def test_undeclared_field_and_raw_rows_rejected():
    x = np.random.default_rng(0).normal(size=(30, 4))
    led = Ledger(protocol=MEAN)
    with pytest.raises(DisclosureError, match="declared-fields-only") as err:
        led.send("c1", "server", {"mean": x.mean(0), "n": 30, "rows": x})
    assert "c1" in str(err.value) and "'mean'" in str(err.value)
    rows = Protocol("rows", {"x": "per_sample", "n": "count"})
    with pytest.raises(DisclosureError, match="no-per-sample-rows"):
        led.send("c1", "server", {"x": x, "n": 30}, protocol=rows)
    noisy = Protocol("perturbed", {"x": "per_sample", "n": "count"}, per_sample=True)
    assert led.send("c1", "server", {"x": x, "n": 30}, protocol=noisy)["x"].shape == (30, 4)


def test_six_sample_center_at_n_min_10():
    led = Ledger()
    x6 = np.ones((6, 3))
    with pytest.raises(DisclosureError, match=r"min-samples>=10") as err:
        led.send("region_6", "server", {"mean": x6.mean(0), "n": 6}, protocol=MEAN)
    assert err.value.center == "region_6" and err.value.protocol == "mean"
    assert "6 sample" in str(err.value)
    # entry-wise: one small centroid is enough to refuse the whole message
    with pytest.raises(DisclosureError, match=r"min-samples>=10"):
        led.send("c", "server", {"centroids": np.zeros((2, 3)), "counts": np.array([40, 9])},
                 protocol=CENTROIDS)  # fmt: skip
    with pytest.raises(DisclosureError, match="carry-their-sample-count"):
        led.send("c", "server", {"mean": np.zeros(3)}, protocol=MEAN)
    with pytest.raises(DisclosureError, match="counts-are-integers"):
        led.send("c", "server", {"centroids": np.zeros((1, 3)), "counts": np.array([10.5])},
                 protocol=CENTROIDS)  # fmt: skip
    ok = led.send("c", "server", {"centroids": np.zeros((2, 3)), "counts": np.array([10, 30])},
                  protocol=CENTROIDS)  # fmt: skip
    assert ok["counts"].tolist() == [10, 30] and led.n_messages == 1
    # the server re-distributes checked aggregates: no count needed on the way down
    led.send("server", "c", {"centroids": np.zeros((2, 3))}, protocol=CENTROIDS)


def test_abstentions_recorded_and_summarised():
    led = Ledger(protocol=MEAN)
    led.send("big", "server", {"mean": np.zeros(2), "n": 50}, 1)
    led.abstain("region_6", 1, MEAN, "6 samples < n_min=10")
    led.abstain("region_6", 2, "mean", "6 samples < n_min=10")
    t = led.table()
    assert (t["kind"] == "abstain").sum() == 2 and led.n_messages == 1 and led.n_abstentions == 2
    a = led.abstentions()
    assert a["center"].tolist() == ["region_6"] * 2 and a["round"].tolist() == [1, 2]
    s = led.summary().set_index("sender")
    assert s.loc["region_6", "abstentions"] == 2 and s.loc["region_6", "messages"] == 0
    assert s.loc["big", "messages"] == 1 and s.loc["big", "abstentions"] == 0
    summ = abstention_summary(t)
    assert summ.to_dict("records") == [
        {"center": "region_6", "protocol": "mean", "abstentions": 2,
         "reasons": "6 samples < n_min=10"}
    ]  # fmt: skip
    assert abstention_summary(Ledger().table()).empty


def test_protocol_rejects_unknown_kind():
    with pytest.raises(ValueError, match="unknown field kinds"):
        Protocol("p", {"x": "raw"})


# ---------------------------------------------------------------- strategies and the round loop
def test_the_two_former_fedavgs_agree_to_zero_on_float32():
    from fedclust.federation import aggregate, weighted_average

    r = np.random.default_rng(0)
    ws = [[r.normal(size=(4, 3)).astype(np.float32), r.normal(size=3).astype(np.float32)]
          for _ in range(3)]  # fmt: skip
    n = [114, 219, 103]
    a = weighted_average(list(zip(ws, n, strict=True)))
    b = aggregate(ws, n)
    ref = [sum(np.float64(k) / sum(n) * w[i].astype(np.float64) for k, w in zip(n, ws, strict=True))
           for i in range(2)]  # fmt: skip
    for x, y, z in zip(a, b, ref, strict=True):
        assert x.dtype == np.float32 and np.array_equal(x, y)
        np.testing.assert_allclose(x, z, rtol=1e-6)


def test_fedavg_simple_published_and_one_client():
    from fedclust.federation import FedAvg, PublishedAverage

    w1, w2 = [np.array([1.0], np.float32)], [np.array([4.0], np.float32)]
    res = [(w1, 1), (w2, 3)]
    assert FedAvg().aggregate_fit(1, res)[0][0] == 3.25
    assert FedAvg("simple").aggregate_fit(1, res)[0][0] == 2.5
    assert PublishedAverage().aggregate_fit(1, res)[0][0] == 3.25
    assert FedAvg().aggregate_fit(1, [(w1, 7)])[0] is not w1[0]  # one client = its weights
    assert FedAvg().aggregate_fit(1, [(w1, 7)])[0][0] == 1.0


def test_fedadam_bias_correction_is_optional():
    from fedclust.federation import FedAdam, FedYogi

    cur = [np.zeros(2)]
    res = [([np.array([0.1, -0.2])], 1)]
    plain = FedAdam(eta=0.1, beta_1=0.9, beta_2=0.99, tau=1e-3).aggregate_fit(1, res, cur)
    # no bias correction: m = 0.1 Δ, v = 0.01 Δ², step = η m / (√v + τ)
    d = np.array([0.1, -0.2])
    np.testing.assert_allclose(plain[0], 0.1 * 0.1 * d / (0.1 * np.abs(d) + 1e-3))
    bc = FedAdam(eta=0.1, beta_1=0.9, beta_2=0.99, tau=1e-3, bias_correction=True)
    scale = np.sqrt(1 - 0.99) / (1 - 0.9)
    np.testing.assert_allclose(bc.aggregate_fit(1, res, cur)[0], plain[0] * scale)
    y = FedYogi(eta=0.1, beta_1=0.9, beta_2=0.99, tau=1e-3).aggregate_fit(1, res, cur)
    np.testing.assert_allclose(y[0], plain[0])  # from v = 0, Yogi's first v equals Adam's


class _Client:
    def __init__(self, n: int, abstain: bool = False):
        self.n, self.abstain = n, abstain

    def fit(self, parameters, config):
        from fedclust.federation import Abstain

        if self.abstain:
            return Abstain("too small")
        return [p + self.n for p in parameters], self.n, {"loss": float(self.n)}


def test_round_loop_logs_eta_skips_abstainers_and_uses_the_ledger(caplog):
    import logging

    from fedclust.federation import FedAvg, History, LedgerClientProxy, fit_protocol, run_rounds

    led = Ledger()
    clients = {"a": _Client(10), "b": _Client(30), "tiny": _Client(2, abstain=True)}
    proxies = [LedgerClientProxy(c, cl, led) for c, cl in clients.items()]
    hist = History()
    with caplog.at_level(logging.INFO, logger="fedclust.federation.engine"):
        out = run_rounds(proxies, FedAvg(), [np.zeros(2)], 2, {}, fit_protocol("toy"),
                         label="toy", history=hist)  # fmt: skip
    # each round: + (10·10 + 30·30) / 40 = 25
    np.testing.assert_allclose(out[0], [50.0, 50.0])
    assert hist.loss == [25.0, 25.0] and hist.participants == [2, 2]
    assert "toy round 2/2" in caplog.text and "ETA" in caplog.text and "elapsed" in caplog.text
    t = led.table()
    assert (t.kind == "fit_update").sum() == 4 and (t.kind == "fit_global").sum() == 6
    assert led.abstentions().center.tolist() == ["tiny", "tiny"]
    with pytest.raises(RuntimeError, match="every center abstained"):
        run_rounds(proxies[2:], FedAvg(), [np.zeros(2)], 1, {}, fit_protocol("toy"))


def test_fit_protocol_refuses_a_client_that_smuggles_rows():
    from fedclust.federation import FedAvg, LedgerClientProxy, fit_protocol, run_rounds

    class Sneaky:
        def fit(self, parameters, config):
            return parameters, 3, {"loss": 1.0}

    led = Ledger()
    proxy = LedgerClientProxy("c", Sneaky(), led)
    # the centre's own check refuses the update before it leaves: recorded as an abstention
    # whose reason names the rule and carries no number
    with pytest.raises(RuntimeError, match="every center abstained"):
        run_rounds([proxy], FedAvg(), [np.zeros(2)], 1, {}, fit_protocol("p", min_samples=5))
    (reason,) = led.abstentions().reason.tolist()
    assert "min-samples" in reason and not any(ch.isdigit() for ch in reason)
    # the ledger of record, reached directly, still raises
    with pytest.raises(DisclosureError, match="min-samples>=5"):
        led.send("c", "server", {"parameters": [np.zeros(2)], "n": 3}, 1, "u",
                 protocol=fit_protocol("p", min_samples=5), downlink=False)  # fmt: skip


def test_dec_make_strategy_builds_the_core_strategies():
    from fedclust.dec.federated import make_strategy
    from fedclust.federation import strategy

    assert isinstance(make_strategy("fedyogi", {"eta": 0.1, "beta_1": 0.9, "beta_2": 0.99,
                                                "tau": 1e-3}), strategy.FedOpt)  # fmt: skip
    w = strategy.FedAvg("simple").aggregate_fit(1, [([np.ones(1)], 1), ([np.zeros(1)], 9)])
    assert w[0][0] == 0.5


def test_inprocess_proxy_tells_a_centre_ahead_and_records_as_before():
    """fit_all / call_all in-process: a centre with ``prefetch`` learns every request of the
    step before the first answer is asked for (a simulation batches its centres' work); the
    requests are still sent, checked and recorded when answered, in the centres' order."""
    from fedclust.federation import LedgerClientProxy, call_all, fit_all, fit_protocol

    told: list = []

    class Centre:
        n_samples = 10

        def __init__(self, cid):
            self.cid = cid

        def prefetch(self, method, parameters, config):
            told.append((self.cid, method, config.get("x")))

        def fit(self, parameters, config):
            told.append((self.cid, "answer"))
            return parameters, 10, {}

        def ping(self, parameters, config):
            return {"n": 10}

    led = Ledger()
    proxies = [LedgerClientProxy(c, Centre(c), led) for c in ("a", "b")]
    fit_all([(p, [np.ones(2)], {"x": 1}) for p in proxies], 1, "fit",
            fit_protocol("t_fit", metrics=()))  # fmt: skip
    assert told == [("a", "fit", 1), ("b", "fit", 1), ("a", "answer"), ("b", "answer")]
    assert list(led.table().kind) == ["fit_global", "fit_update"] * 2
    call_all(proxies, "ping", {"x": 2}, 1, "ping", Protocol("t_ping", {"n": "count"}),
             Protocol("t_ping_req", {"x": "metadata"}))  # fmt: skip
    assert told[4:] == [("a", "ping", 2), ("b", "ping", 2)]
    assert list(led.table().kind[4:]) == ["ping_request", "ping"] * 2


def test_inprocess_answer_is_copied_and_checked_once_at_the_centre(monkeypatch):
    """Issue 30 B.6: a centre's answer is copied and checked by its guard, and the ledger
    records that very copy (no second copy and check) when the guard checked it against the
    server's protocol; the server still shares no array with the centre. A centre that declares
    its own, looser protocol gets its answer checked again by the ledger against the server's."""
    from fedclust.federation import LedgerClientProxy, guard
    from fedclust.federation import ledger as ledger_mod

    calls: list[str] = []
    real = ledger_mod.check_disclosure

    def counting(message, protocol, center, from_server=False):
        calls.append("server" if from_server else "centre")
        return real(message, protocol, center, from_server)

    monkeypatch.setattr(ledger_mod, "check_disclosure", counting)
    monkeypatch.setattr(guard, "check_disclosure", counting)
    sums = Protocol("t_once_sums", {"s": "aggregate", "n": "count"}, min_samples=5)
    request = Protocol("t_once_req", {"x": "metadata"})

    class Centre:
        n_samples = 8
        cid = "a"

        def __init__(self):
            self.s = np.arange(3.0)

        def sums(self, parameters, config):
            return {"s": self.s, "n": 8}

    centre = Centre()
    led = Ledger()
    proxy = LedgerClientProxy("a", centre, led)
    out = proxy.call("sums", {"x": 1}, 1, "sums", sums, request)
    assert calls == ["server", "centre"]  # the request, then the answer once (at the centre)
    assert out["s"] is not centre.s and np.shares_memory(out["s"], centre.s) is False
    centre.s[0] = 99.0
    assert out["s"][0] == 0.0 and list(led.table().kind) == ["sums_request", "sums"]
    # the centre's own declaration (floor 1) differs from the server's (floor 5): both check
    calls.clear()
    centre.n_samples, centre.s = 3, np.arange(3.0)
    centre.sums = lambda parameters, config: {"s": centre.s, "n": 3}
    centre.protocols = {"sums": Protocol("t_once_sums", {"s": "aggregate", "n": "count"})}
    centre.disclosure = guard.DisclosurePolicy(nfilter_subset=1)
    with pytest.raises(DisclosureError, match="min-samples>=5"):
        proxy.call("sums", {"x": 1}, 1, "sums", sums, request)
    assert calls == ["server", "centre", "centre"]
