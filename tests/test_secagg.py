"""Secure aggregation in the federation core (issue 24): masked shares are uniform and
independent of the data, the unmasked sum is today's FedAvg, dropouts are recovered, a missing
unmask aborts naming the centre, and a centre that requires it refuses to send without it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fedclust.errors import ConfigError
from fedclust.federation import (
    INPROCESS,
    Abstain,
    Ledger,
    Protocol,
    federate,
    fit_protocol,
    make_strategy,
    run_rounds,
    secagg,
    secure_sum,
)
from fedclust.federation.privacy import (
    OFF,
    PrivacySettings,
    PrivateRounds,
    configure,
    current,
    settings_from,
    stage_of_rule,
    using,
)

FIT = fit_protocol("test_secagg_fit")
SECURE = PrivacySettings(secure_aggregation=True)


class Recording(Ledger):
    """A ledger that keeps every delivered copy (what a storing server holds)."""

    def __init__(self) -> None:
        super().__init__()
        self.delivered: list[tuple[str, str, str, dict]] = []

    def send(self, sender, receiver, message, round=0, kind="", protocol=None, *, downlink=None):
        out = super().send(sender, receiver, message, round, kind, protocol, downlink=downlink)
        self.delivered.append((sender, kind, self.records[-1]["protocol"], out))
        return out


class Centre:
    """Fits ``w ← w/2 + mean(x)`` (float32), reports its n and a loss; may abstain once."""

    def __init__(self, cid: str, x: np.ndarray, abstain_round: int | None = None, seed=None):
        self.cid, self.x, self.n_samples = cid, x, len(x)
        self.abstain_round, self.calls = abstain_round, 0
        if seed is not None:
            self.secagg_seed = seed

    def fit(self, parameters, config):
        self.calls += 1
        if self.calls == self.abstain_round:
            return Abstain("not this round")
        w = (np.asarray(parameters[0]) * 0.5 + self.x.mean(0)).astype(np.float32)
        extra = (np.asarray(parameters[1]) + self.x[:3].sum()).astype(np.float32)
        return [w, extra], len(self.x), {"loss": float(((self.x - w) ** 2).mean())}


def centres(seed=0, shift=0.0, abstain=None, k=4, d=50):
    rng = np.random.default_rng(seed)
    return [
        Centre(f"c{i}", rng.normal(i + shift, 1.0, (8 + 5 * i, d)),
               abstain if i == 1 else None, seed=100 + i)
        for i in range(k)
    ]  # fmt: skip


def run(cs, strategy="fedavg", rounds=3, settings=OFF, ledger=None, d=50, transport=INPROCESS):
    init = [np.zeros(d, np.float32), np.ones(2, np.float32)]
    strat = make_strategy(strategy, {"eta": 0.1, "beta_1": 0.9, "beta_2": 0.99, "tau": 1e-3})
    return federate(
        cs,
        lambda ps: run_rounds(ps, strat, init, rounds, {}, FIT, privacy=settings),
        ledger=ledger if ledger is not None else Ledger(),
        transport=transport,
    )


def test_fixed_point_sums_decode_exactly_and_refuse_overflow():
    rng = np.random.default_rng(1)
    xs = [rng.normal(0, 100, 1000) for _ in range(5)]
    total = sum(secagg.encode(x, 32, terms=5) for x in xs)  # uint64 wraps modulo 2^64
    exact = sum(np.rint(x * 2.0**32) for x in xs) / 2.0**32
    assert np.array_equal(secagg.decode(total, 32), exact)
    assert np.allclose(secagg.decode(total, 32), sum(xs), atol=5 * 2.0**-32)
    with pytest.raises(Exception, match="fixed-point range"):
        secagg.encode(np.array([2.0**30]), 32, terms=2)


def test_pair_secrets_agree_and_masks_cancel():
    a, b = secagg.KeyPair(bytes(range(32))), secagg.KeyPair(bytes(range(1, 33)))
    s_ab = a.agree(b.public, "a", "b", "s1")
    assert s_ab == b.agree(a.public, "b", "a", "s1")
    assert s_ab != a.agree(b.public, "a", "b", "s2")  # a new session, new secrets
    m = secagg.prg(secagg.kdf(s_ab, "round", 1), 1000)
    assert np.array_equal(m + (np.zeros(1000, np.uint64) - m), np.zeros(1000, np.uint64))
    assert secagg.KEY_AGREEMENT == "x25519"  # cryptography ships with Flower here


@pytest.mark.parametrize("strategy", ["fedavg", "fedavg_simple", "fedadam"])
def test_secure_fedavg_equals_plain_fedavg(strategy):
    plain = run(centres(), strategy)
    secure = run(centres(), strategy, settings=SECURE)
    for p, s in zip(plain, secure, strict=True):
        assert s.dtype == p.dtype
        np.testing.assert_allclose(s, p, rtol=1e-6, atol=1e-7)


class Tagged:
    """A server-side wrapper of a proxy (as fedcref's ``_Member``): it adds an undeclared
    number to every reply *after* the share arrived — unmasked, and sorting before every
    declared field, so a server that counted it would read every mask one place off."""

    def __init__(self, proxy, tag: int) -> None:
        self.proxy, self.cid, self.tag = proxy, proxy.cid, tag

    def fit(self, parameters, config, server_round, kind, protocol):
        out = self.proxy.fit(parameters, config, server_round, kind, protocol)
        return None if out is None else (out[0], out[1], {**out[2], "__tag__": self.tag})

    def call(self, *args, **kwargs):
        return self.proxy.call(*args, **kwargs)


@pytest.mark.parametrize("epsilon", [None, 4.0])
def test_a_server_side_tag_on_the_replies_is_no_part_of_the_secure_sum(epsilon):
    """The unmask sums a protocol's declared fields only (what the centre masked): replies
    tagged by a server-side wrapper decode to the untagged plain (noised) mean."""
    init = [np.zeros(50, np.float32), np.ones(2, np.float32)]
    dp = {"epsilon": epsilon, "clip": 5.0, "seed": 3}

    def server(settings, tag):
        def go(ps):
            ps = [Tagged(p, 7 + i) for i, p in enumerate(ps)] if tag else ps
            return run_rounds(ps, make_strategy("fedavg"), init, 2, {}, FIT, privacy=settings)

        return go

    plain = federate(centres(), server(PrivacySettings(**dp), False), ledger=Ledger())
    secure = federate(centres(), server(PrivacySettings(secure_aggregation=True, **dp), True),
                      ledger=Ledger())  # fmt: skip
    for p, s in zip(plain, secure, strict=True):
        np.testing.assert_allclose(s, p, rtol=1e-6, atol=1e-6)
    assert secagg._numeric_keys({"__tag__": 1, "n": 2, "parameters": [], "secagg": ["x"]},
                                FIT) == ["n", "parameters"]  # fmt: skip


def test_server_sees_only_uniform_shares_independent_of_the_data():
    """Centre c0's round-1 update of two very different datasets: every value the server
    receives is a uint64 share; the shares are uniform modulo 2^64 (chi-square on the top byte)
    and indistinguishable between the datasets (two-sample KS), while the plain fixed-point
    encodings fail both tests (the test can fail)."""
    views, plain = [], []
    for shift in (0.0, 1000.0):
        led = Recording()
        run(centres(shift=shift, d=2000), settings=SECURE, ledger=led, rounds=1, d=2000)
        ups = [m for s, kind, _, m in led.delivered if kind == "fit_update"]
        assert ups and all(set(m) == {"parameters", "n", "loss", "secagg"} for m in ups)
        for m in ups:
            for v in [*m["parameters"], m["n"], m["loss"]]:
                assert isinstance(v, np.ndarray) and v.dtype == np.uint64
        views.append(ups[0]["parameters"][0])
        c0 = centres(shift=shift, d=2000)[0]
        w = c0.fit([np.zeros(2000, np.float32), np.ones(2, np.float32)], {})
        plain.append(secagg.encode(np.asarray(w[0][0], np.float64) * w[1], 32, 4))
    for v in views:
        counts = np.bincount((v >> np.uint64(56)).astype(int), minlength=256)
        assert stats.chisquare(counts).pvalue > 1e-3
    u = [v.astype(np.float64) / 2.0**64 for v in views]
    assert stats.ks_2samp(u[0], u[1]).pvalue > 1e-3
    counts = np.bincount((plain[0] >> np.uint64(56)).astype(int), minlength=256)
    assert stats.chisquare(counts).pvalue < 1e-6
    up = [p.astype(np.float64) / 2.0**64 for p in plain]
    assert stats.ks_2samp(up[0], up[1]).pvalue < 1e-6


def test_a_centre_dropping_after_masking_is_recovered():
    """c1 abstains in round 2 after the cohort was fixed (its peers masked with it): the
    survivors reveal that round's pair keys and the result is plain FedAvg without c1."""
    plain = run(centres(abstain=2))
    led = Recording()
    secure = run(centres(abstain=2), settings=SECURE, ledger=led)
    for p, s in zip(plain, secure, strict=True):
        np.testing.assert_allclose(s, p, rtol=1e-6, atol=1e-7)
    unmask = [m for _, kind, _, m in led.delivered if kind == "secagg_unmask"]
    revealed = [len(m["pair_keys"]) for m in unmask]
    assert revealed == [0] * 4 + [1] * 3 + [0] * 4  # round 2: three survivors, one dropout


def test_a_survivor_that_does_not_unmask_aborts_naming_it():
    def server(proxies):
        victim = proxies[2]
        call = victim.call

        def no_unmask(method, *a, **kw):
            return None if method == "secagg_unmask" else call(method, *a, **kw)

        victim.call = no_unmask
        init = [np.zeros(50, np.float32), np.ones(2, np.float32)]
        return run_rounds(proxies, make_strategy("fedavg"), init, 1, {}, FIT, privacy=SECURE)

    with pytest.raises(secagg.SecAggAborted, match="'c2'"):
        federate(centres(), server, ledger=Ledger())


def test_one_centre_with_secure_aggregation_equals_pooled():
    """One centre holding every sample: its secure mean is the pooled mean (the centre's fit
    on all the data), to the float32 value."""
    rng = np.random.default_rng(3)
    x = rng.normal(2.0, 1.0, (40, 50))
    pooled = Centre("all", x).fit([np.zeros(50, np.float32), np.ones(2, np.float32)], {})[0]
    secure = run([Centre("all", x, seed=7)], rounds=1, settings=SECURE)
    for p, s in zip(pooled, secure, strict=True):
        assert np.array_equal(p, s)


def test_a_centre_requiring_secure_aggregation_refuses_plain_rounds():
    cs = centres()
    for c in cs:
        c.privacy = SECURE
    led = Ledger()
    with pytest.raises(RuntimeError, match="every center abstained"):
        run(cs, ledger=led, rounds=1)
    reasons = set(led.abstentions()["reason"])
    assert reasons == {"refused by the centre's privacy settings: secure-aggregation-required"}
    assert run(centres(), settings=SECURE, rounds=1)  # the same centres under secure aggregation


class Summer:
    PROTO = Protocol("test_sum", {"s": "aggregate", "v": "aggregate", "n": "count"}, summed=True)

    def __init__(self, cid, x):
        self.cid, self.x, self.n_samples = cid, x, len(x)

    def stats(self, parameters, config):
        return {"s": float(self.x.sum()), "v": self.x.sum(0), "n": len(self.x)}


def test_secure_sum_helper_for_summing_protocols():
    rng = np.random.default_rng(4)
    xs = [rng.normal(size=(5 + i, 3)) for i in range(3)]
    req = Protocol("test_sum_request", {"parameters": "parameters"})

    def server(settings):
        return lambda ps: secure_sum(ps, "stats", {"parameters": [np.zeros(1)]}, 1, "sum",
                                     Summer.PROTO, req, settings=settings)  # fmt: skip

    cs = [Summer(f"s{i}", x) for i, x in enumerate(xs)]
    plain, who = federate(cs, server(OFF), ledger=Ledger())
    led = Recording()
    sec, who2 = federate(cs, server(SECURE), ledger=led)
    assert who == who2 == ["s0", "s1", "s2"]
    assert plain["s"] == sum(float(x.sum()) for x in xs)  # the plain path: Python sum, in order
    assert plain["n"] == sec["n"] == 18
    np.testing.assert_allclose(sec["s"], plain["s"], atol=1e-8)
    np.testing.assert_allclose(sec["v"], plain["v"], atol=1e-8)
    shares = [m for s, kind, _, m in led.delivered if kind == "sum" and s != "server"]
    assert all(m["v"].dtype == np.uint64 for m in shares)


def test_settings_from_config_default_and_stage_override():
    section = {"default": {"secure_aggregation": True, "dp": {"epsilon": None, "delta": 1e-5}},
               "stages": {"dec": {"dp": {"epsilon": 2.0, "clip": 0.5}}}}  # fmt: skip
    dec = settings_from(section, "dec", seed=5)
    assert dec.secure_aggregation and dec.epsilon == 2.0 and dec.clip == 0.5 and dec.seed == 5
    assert dec.central and not dec.local
    other = settings_from(section, "survival")
    assert other.secure_aggregation and not other.dp
    assert not settings_from(None, "dec").active
    with pytest.raises(ConfigError, match="unknown privacy setting"):
        settings_from({"default": {"noise": 1}})
    assert stage_of_rule("decentral_train", ["dec", "decentral", "data"]) == "decentral"
    assert stage_of_rule("dec_fed_tsae", ["dec", "decentral"]) == "dec"
    assert stage_of_rule("all", ["dec"]) is None
    configure({"seed": 3, "federation": {"privacy": section}}, "dec")
    try:
        assert current().epsilon == 2.0
        with using(OFF):
            assert not current().active
    finally:
        configure({}, None)
    assert current() == OFF


def test_off_takes_the_unchanged_loop(monkeypatch):
    """Secure aggregation off and ε = ∞: the round loop never builds the private round."""

    def boom(*a, **k):
        raise AssertionError("PrivateRounds used with privacy off")

    monkeypatch.setattr(PrivateRounds, "start", boom)
    off = settings_from({"default": {"secure_aggregation": False, "dp": {"epsilon": None}}})
    a, b = run(centres(), settings=off), run(centres())
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x, y)


def test_secure_aggregation_on_flowers_simulation_runtime():
    """The key exchange, the shares and the unmask round travel as Flower messages: the
    result is the in-process plain FedAvg's, the ledger of record holds only shares."""
    pytest.importorskip("flwr")
    from fedclust import transports

    led = Recording()
    secure = run(centres(), settings=SECURE, ledger=led, rounds=2,
                 transport=transports.get("flower-simulation"))  # fmt: skip
    for p, s in zip(run(centres(), rounds=2), secure, strict=True):
        np.testing.assert_allclose(s, p, rtol=1e-6, atol=1e-7)
    ups = [m for _, kind, _, m in led.delivered if kind == "fit_update"]
    assert len(ups) == 8 and all(m["parameters"][0].dtype == np.uint64 for m in ups)


def test_survival_weights_averaging_under_secure_aggregation():
    """A real stage: D6.2's Weights Averaging (run_rounds + the evaluate exchange through
    secure_sum) with one centre under secure aggregation equals the centralized training on
    its data; with three centres it equals the plain run (float precision)."""
    import torch

    from fedclust.survival.model import get_parameters
    from fedclust.survival.strategies import SurvivalClient, run_weights_averaging
    from fedclust.survival.train import HyperParams, ModelConfig, train_centralized

    g = np.random.default_rng(0)
    x = g.normal(size=(150, 4))
    t = np.round(g.exponential(np.exp(-x @ np.array([0.8, -0.5, 0.3, 0.0]))), 1)
    e = (g.random(150) < 0.7).astype(int)
    mc = ModelConfig(hidden=(8, 4), l1=1e-3, l2=1e-3)
    torch.manual_seed(3)
    init = get_parameters(mc.build(4))
    hp = HyperParams(fe=3, ie=2, batches=2, lr=0.02)
    ref, _ = train_centralized(x, t, e, init, hp, mc, seed=11)
    with using(SECURE):
        one = run_weights_averaging([SurvivalClient("c0", x, t, e, mc, seed=11)], init, hp, mc,
                                    Ledger())  # fmt: skip
    for a, b in zip(one[0][0], ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)

    def three():
        return [SurvivalClient(f"c{k}", x[k::3], t[k::3], e[k::3], mc, seed=k) for k in range(3)]

    plain = run_weights_averaging(three(), init, hp, mc, Ledger())
    led = Recording()
    with using(SECURE):
        secure = run_weights_averaging(three(), init, hp, mc, led)
    for a, b in zip(secure[0][0], plain[0][0], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    evals = [m for s, kind, _, m in led.delivered if kind == "evaluate" and s != "server"]
    assert evals and all(m["loss_sum"].dtype == np.uint64 for m in evals)
