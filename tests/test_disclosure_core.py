"""Issue 22, the core: checks at the centre with the centre's own floors (never the server's
request), counts checked against the centre's true size, and a hardened ledger. Each test plays
a curious server or a careless centre against what the seam used to let through."""

from __future__ import annotations

import numpy as np
import pytest

from fedclust.errors import ConfigError, DisclosureError
from fedclust.federation import Abstain, Ledger, Protocol, federate
from fedclust.federation.disclosure import (
    DisclosurePolicy,
    configure,
    configured_policy,
    policy_for,
)
from fedclust.federation.guard import reply, sanitise

MEAN = Protocol("t_mean", {"mean": "aggregate", "n": "count"}, min_samples=1)
HIST = Protocol("t_hist", {"cells": "table"}, min_samples=1)
ROWS = Protocol("t_rows", {"rows": "per_sample", "n": "count"}, per_sample=True)
GLM = Protocol("t_glm", {"beta": "parameters", "n": "count"}, glm=True)


class Centre:
    def __init__(self, cid, x, policy=None, claim=None):
        self.cid, self.x, self.n_samples = cid, np.asarray(x, float), len(x)
        self.claim = claim
        if policy is not None:
            self.disclosure = policy

    def mean(self, parameters, config):
        return {"mean": self.x.mean(0), "n": self.claim or len(self.x)}

    def rows(self, parameters, config):
        return {"rows": self.x, "n": len(self.x)}

    def centred(self, parameters, config):  # "a summary" with one row per sample
        return {"mean": self.x - self.x.mean(0), "n": len(self.x)}

    def cells(self, parameters, config):
        return {"cells": np.bincount(self.x[:, 0].astype(int), minlength=4)}

    def glm(self, parameters, config):
        return {"beta": np.linalg.lstsq(self.x, np.ones(len(self.x)), rcond=None)[0],
                "n": len(self.x)}  # fmt: skip

    def shy(self, parameters, config):
        return Abstain(f"a local cluster has 1 < m={config.get('m', 5)} samples")


def _ask(centre, method, protocol, request=None):
    """The server asks ``method`` (its request declared too: every message has a Protocol)."""
    led = Ledger()
    down = Protocol(f"{method}_request", {k: "metadata" for k in (request or {})})
    out = federate([centre], lambda ps: ps[0].call(method, request or {}, 0, method, protocol,
                                                   down), ledger=led)  # fmt: skip
    return out, led


def test_the_centres_floor_is_its_own_and_a_request_cannot_lower_it():
    """A server that declares min_samples = 1 still gets nothing from a 2-patient centre."""
    out, led = _ask(Centre("tiny", [[1.0, 2.0], [3.0, 4.0]]), "mean", MEAN)
    assert out is None and led.abstentions().center.tolist() == ["tiny"]
    strict = DisclosurePolicy(nfilter_subset=10)
    out, _ = _ask(Centre("strict", np.ones((6, 2)), strict), "mean", MEAN)
    assert out is None  # 6 < the centre's own floor of 10, whatever the protocol says
    out, _ = _ask(Centre("ok", np.ones((6, 2))), "mean", MEAN)
    np.testing.assert_array_equal(out["mean"], [1.0, 1.0])


def test_counts_are_checked_not_believed():
    """Before: a centre's self-reported n passed the floor. Now n ≤ its true size."""
    out, led = _ask(Centre("liar", np.ones((3, 2)), claim=500), "mean", MEAN)
    assert out is None and "counts-are-checked" in led.abstentions().reason[0]


def test_per_sample_rows_need_the_centres_opt_in():
    x = np.arange(12.0).reshape(6, 2)
    out, _ = _ask(Centre("c", x), "rows", ROWS)
    assert out is None
    opted = DisclosurePolicy(allow_per_sample=("t_rows",))
    out, _ = _ask(Centre("c", x, opted), "rows", ROWS)
    np.testing.assert_array_equal(out["rows"], x)


def test_an_aggregate_with_one_row_per_sample_is_refused():
    out, led = _ask(Centre("c", np.arange(12.0).reshape(6, 2)), "centred", MEAN)
    assert out is None and "aggregates-are-not-per-sample" in led.abstentions().reason[0]


def test_table_cells_are_zero_or_at_least_nfilter_tab():
    x = np.array([[0], [0], [0], [2], [2], [2], [2]])  # cells 3, 0, 4, 0: fine
    out, _ = _ask(Centre("c", x), "cells", HIST)
    np.testing.assert_array_equal(out["cells"], [3, 0, 4, 0])
    x = np.array([[0], [0], [0], [1], [2], [2], [2]])  # a cell of one patient
    out, led = _ask(Centre("c", x), "cells", HIST)
    assert out is None and "nfilter_tab" in led.abstentions().reason[0]


def test_glm_protocols_release_at_most_nfilter_glm_times_n_parameters():
    g = np.random.default_rng(0)
    out, _ = _ask(Centre("small", g.normal(size=(5, 4))), "glm", GLM)  # 4 > 0.33 * 5
    assert out is None
    out, _ = _ask(Centre("big", g.normal(size=(40, 4))), "glm", GLM)  # 4 ≤ 13.2
    assert out["beta"].shape == (4,)


def test_abstention_reasons_carry_no_counts():
    """Before: "a local cluster has 1 < m=5 samples" reached the server."""
    out, led = _ask(Centre("c", np.ones((9, 2))), "shy", MEAN, {"m": 5})
    assert out is None
    (reason,) = led.abstentions().reason
    assert "local cluster" in reason and not any(ch.isdigit() for ch in reason)
    assert sanitise("x" * 500, DisclosurePolicy(nfilter_string=20)) == "x" * 20


def test_a_centre_answers_only_the_methods_it_declares():
    class Declared(Centre):
        protocols = {"mean": MEAN}

    c = Declared("c", np.ones((5, 2)))
    assert isinstance(reply(c, "rows", None, {}, ROWS), Abstain)  # server names another method
    assert not isinstance(reply(c, "mean", None, {}, ROWS), Abstain)  # its own protocol applies


def test_policies_come_from_the_centres_config_section():
    cfg = {"disclosure": {"default": {"nfilter_subset": 4},
                          "centres": {"Europe": {"nfilter_subset": 20}}}}  # fmt: skip
    assert policy_for(cfg, "Europe").nfilter_subset == 20
    assert policy_for(cfg, "South").nfilter_subset == 4 and policy_for({}, "x").nfilter_tab == 3
    with pytest.raises(ConfigError, match="nfilter_sbuset"):
        policy_for({"disclosure": {"default": {"nfilter_sbuset": 3}}})
    configure(cfg["disclosure"])
    try:
        assert configured_policy("Europe").nfilter_subset == 20
        out, _ = _ask(Centre("Europe", np.ones((10, 2))), "mean", MEAN)
        assert out is None  # 10 < Europe's own floor
    finally:
        configure({})


# ---------------------------------------------------------------- ledger hardening (22.4)
P = Protocol("t_p", {"v": "aggregate", "n": "count", "label": "metadata"})


def test_empty_counts_are_rejected():
    for empty in ([], {}, np.zeros(0)):
        with pytest.raises(DisclosureError, match="counts-not-empty"):
            Ledger().send("c", "server", {"v": 1.0, "n": empty}, protocol=P, downlink=False)


def test_array_and_scalar_subclasses_are_refused_or_copied_plain():
    masked = np.ma.masked_array([1.0, 2.0], mask=[0, 1])
    with pytest.raises(DisclosureError, match="MaskedArray"):
        Ledger().send("c", "server", {"v": masked, "n": 5}, protocol=P, downlink=False)
    with pytest.raises(DisclosureError, match="matrix"):
        Ledger().send("c", "server", {"v": np.asmatrix([[1.0]]), "n": 5}, protocol=P,
                      downlink=False)  # fmt: skip

    class Tagged(float):
        secret = "patient 17"

    out = Ledger().send("c", "server", {"v": Tagged(1.5), "n": 5}, protocol=P, downlink=False)
    assert type(out["v"]) is float and out["v"] == 1.5


def test_a_mapping_is_read_once_what_is_checked_is_what_is_delivered():
    class TwoFaced(dict):
        reads = 0

        def items(self):
            TwoFaced.reads += 1
            if TwoFaced.reads == 1:
                return [("v", 1.0), ("n", 5)]
            return [("v", np.arange(100.0)), ("n", 5), ("rows", np.arange(100.0))]

    out = Ledger().send("c", "server", TwoFaced(), protocol=P, downlink=False)
    assert out == {"v": 1.0, "n": 5}


def test_metadata_is_short_strings_and_small_integers():
    ok = Ledger().send("c", "server", {"v": 1.0, "n": 5, "label": "brca"}, protocol=P,
                       downlink=False)  # fmt: skip
    assert ok["label"] == "brca"
    for bad in (np.linspace(0, 1, 5), 3.25, "x" * 81, 2**70):
        with pytest.raises(DisclosureError, match="metadata"):
            Ledger().send("c", "server", {"v": 1.0, "n": 5, "label": bad}, protocol=P,
                          downlink=False)  # fmt: skip


def test_the_count_rules_never_depend_on_the_senders_name():
    """Before: a client named "server" skipped every count rule."""
    with pytest.raises(DisclosureError, match="min-samples"):
        Ledger().send("server", "graph", {"v": 1.0, "n": 0}, protocol=P, downlink=False)
    # a centre named "server" behind a proxy is still a centre
    out, led = _ask(Centre("server", np.ones((2, 2))), "mean", MEAN)
    assert out is None and led.abstentions().center.tolist() == ["server"]
