"""The attack suite (issue 22, items 5–6): every protocol run on small synthetic centres, once
under the centres' own disclosure policy and once with the protections off, attacked by an
honest-but-curious server from the messages it recorded.

Each scenario returns a :class:`Outcome`: what one centre sent (fields, floats per message, the
floor it applied), the attack, how many individual records the attack recovers with the
protections off (the old protocol: the attack works) and with them on (the protocol as it runs
now; 0 unless the protocol discloses by design and runs only with the centres' opt-in).
:func:`run_suite` tabulates them for the report's Privacy section; the tests
(``tests/test_attack_suite_*.py``) assert the same numbers. Everything is generated data (a few
hundred patients in total, seconds of CPU).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from fedclust.federation.disclosure import DEFAULT_POLICY, DisclosurePolicy

from . import attacks as A
from .recorder import RecordingLedger
from .release_log import ReleaseLog

#: the protections off: floors of 1, every per-sample protocol allowed, any model size
OFF = DisclosurePolicy(
    nfilter_tab=1,
    nfilter_subset=1,
    nfilter_glm=1e9,
    allow_per_sample=(
        "hac.gradual.candidate", "hac.gradual.distances", "hac.gradual.samples",
        "hac.simultaneous", "hac.projection", "hac.perturbation",
    ),
)  # fmt: skip
#: the default centres with the HAC opt-in of config/config.yaml (the thesis' protocols)
OPTED_IN = DisclosurePolicy(
    allow_per_sample=(
        "hac.gradual.candidate", "hac.gradual.distances", "hac.simultaneous", "hac.projection",
        "hac.perturbation",
    )
)  # fmt: skip


@dataclass
class Outcome:
    protocol: str
    sent: str  # the fields one centre sent
    floats: int  # floats in that centre's largest message
    floor: str  # the floor the centre applied
    attack: str
    records: int  # the centre's records the attack targets
    recovered_unprotected: int  # with the protections off (the attack works)
    recovered: int  # as the protocol runs now
    by_design: str = ""  # what the protocol still discloses, when it runs only with opt-in
    abstentions: int = 0
    numbers_in_reasons: int = 0


def _one_centre(led: RecordingLedger, centre: str, protocol: str | None = None) -> tuple[str, int]:
    msgs = [(r, m) for r, m in led.kept if r["sender"] == centre
            and (protocol is None or r["protocol"] == protocol)]  # fmt: skip
    if not msgs:
        return "(abstained)", 0
    fields = sorted({f for r, _ in msgs for f in r["fields"].split(",") if f})
    return ",".join(fields), int(max(r["floats"] for r, _ in msgs))


def _reasons(*leds: RecordingLedger) -> tuple[int, int]:
    tabs = [led.abstentions() for led in leds]
    t = pd.concat(tabs) if tabs else pd.DataFrame(columns=["reason"])
    return len(t), A.counts_in_reasons(t)


# ---------------------------------------------------------------- survival
def _survival_centres(seed: int = 0, n: int = 40, k: int = 3):
    g = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        t = np.round(g.exponential(3, n), 4)
        e = g.random(n) < 0.6
        grp = g.choice(["a", "b"], n)
        out.append((t, e, grp))
    return out


def km() -> Outcome:
    from fedclust.survival.km import federated_km, grid_edges

    cents = _survival_centres()
    truth = [(ti, int(ei), gi) for ti, ei, gi in zip(*cents[0], strict=True)]

    def attack(led: RecordingLedger, edges: np.ndarray) -> int:
        got = led.received(sender="centre0", kind="km_counts")
        if not got:
            return 0
        m = got[0][1]
        claims = A.km_records(edges, m["events"], m["censored"], ["a", "b"])
        return A.matched_records(claims, truth)

    exact = np.unique(np.concatenate([c[0] for c in cents]))
    off = RecordingLedger()
    federated_km(cents, exact, ["a", "b"], off, policies=[OFF] * 3)
    edges = grid_edges({"step": 0.25, "max": 20})
    on = RecordingLedger()
    federated_km(cents, edges, ["a", "b"], on, policies=[DEFAULT_POLICY] * 3)
    m = on.received(sender="centre0", kind="km_counts")[0][1]
    sent, floats = _one_centre(on, "centre0", "survival_km_counts")
    n_ab, n_num = _reasons(on)
    return Outcome(
        "survival_km_counts",
        sent,
        floats,
        f"cells 0 or >= nfilter_tab = {DEFAULT_POLICY.nfilter_tab}",
        "rebuild (time, status, group) records from the count tables; patients in cells < 3",
        len(truth),
        attack(off, exact),
        attack(on, edges) + A.isolated_in_cells([m["events"], m["censored"], m["n"]], 3),
        abstentions=n_ab,
        numbers_in_reasons=n_num,
    )


def cv() -> Outcome:
    """Centre-scored CV: the held-out centre answers two pair counts; the old protocol sent
    (risk, time, event) per patient, i.e. every record."""
    from fedclust.federation import LedgerClientProxy
    from fedclust.survival import strategies as S
    from fedclust.survival.experiment import init_parameters
    from fedclust.survival.train import ModelConfig

    g = np.random.default_rng(1)
    x = g.normal(size=(30, 3))
    t = g.exponential(size=30)
    e = (g.random(30) < 0.7).astype(int)
    mc = ModelConfig(hidden=(4,))
    c = S.SurvivalClient("centre0", x, t, e, mc, 0)
    led = RecordingLedger()
    model = [(init_parameters(mc, 3, 0), 1.0)]
    LedgerClientProxy(c.cid, c, led).call("cv_concordance", S.pack_model(model), 0, "cv",
                                          S.CV_CONCORDANCE, S.CV_REQUEST)  # fmt: skip
    truth = [(ti, int(ei), "cv") for ti, ei in zip(t, e, strict=True)]
    sent, floats = _one_centre(led, "centre0")
    old = [(ti, ei, "cv") for ti, ei in zip(t, e, strict=True)]  # what the old rows carried
    return Outcome(
        "survival_cv_concordance",
        sent,
        floats,
        f"n >= nfilter_subset = {DEFAULT_POLICY.nfilter_subset}",
        "read (time, event) records from the held-out centre's rows",
        len(truth),
        A.matched_records(old, truth),
        A.matched_records(A.cv_records(led.kept), truth),
    )


def coxph() -> Outcome:
    from fedclust.survival.coxph import fit_federated_coxph

    g = np.random.default_rng(2)
    x = (g.random((62, 4)) < 0.5).astype(float)
    t = g.exponential(size=62)
    e = (g.random(62) < 0.7).astype(int)
    c = np.r_[0, 0, np.arange(60) % 2 + 1]
    t[:2], e[:2] = [0.5, 2.0], [1, 0]
    x[0], x[1] = [1, 0, 1, 0], [0, 1, 1, 0]  # the pair differs in two covariates
    blocks = [(x[c == k], t[c == k], e[c == k]) for k in range(3)]

    def attack(led: RecordingLedger) -> int:
        got = led.received(sender="centre0", kind="coxph_sums")
        if not got:
            return 0
        claims = A.cox_known_partner(got[0][1], x[1])  # side information: the other patient
        return A.matched_rows(claims, x[:1])

    off, on = RecordingLedger(), RecordingLedger()
    fit_federated_coxph(blocks, off, policies=[OFF] * 3)
    fit_federated_coxph(blocks, on, policies=[DEFAULT_POLICY] * 3)
    sent, floats = _one_centre(on, "centre1", "survival_coxph_sums")
    n_ab, n_num = _reasons(on)
    return Outcome(
        "survival_coxph_sums",
        sent,
        floats,
        "patients and events >= nfilter_subset; covariates <= nfilter_glm · n",
        "a 2-patient stratum's score is x_event − x_other: with one patient known, the other",
        1,
        attack(off),
        attack(on),
        abstentions=n_ab,
        numbers_in_reasons=n_num,
    )


# ---------------------------------------------------------------- HAC
def genewise() -> Outcome:
    from fedclust.hac.genewise import genewise_clustering

    g = np.random.default_rng(3)
    x = g.gamma(2, 50, size=(20, 30))
    blocks = [x[:2], x[2:10], x[10:]]

    def attack(led: RecordingLedger) -> int:
        st = led.received(sender="center0", kind="gene stats")
        dm = led.received(sender="center0", kind="gene distances")
        # the global statistics the server sends back with its round-2 request
        gs = [m for r, m in led.kept if r["sender"] == "server" and "norm" in m]
        if not (st and dm and gs):
            return 0
        return A.matched_rows(A.genewise_two_samples(st[0][1], dm[0][1], gs[0]), x[:2])

    off, on = RecordingLedger(), RecordingLedger()
    genewise_clustering(blocks, "average", "cosine", off, n_min=2, policy=OFF)
    genewise_clustering(blocks, "average", "cosine", on, n_min=2, policy=OPTED_IN)
    sent, floats = _one_centre(on, "center1")
    n_ab, n_num = _reasons(on)
    return Outcome(
        "hac.genewise",
        sent,
        floats,
        "n >= max(n_min, nfilter_subset)",
        "a 2-sample centre: moments give each gene's pair, the distance share its pairing",
        2,
        attack(off),
        attack(on),
        abstentions=n_ab,
        numbers_in_reasons=n_num,
    )


def simultaneous() -> Outcome:
    from fedclust.hac.simultaneous import simultaneous_run

    g = np.random.default_rng(4)
    x = g.normal(size=(30, 5))
    blocks = [x[:10], x[10:20], x[20:]]
    off, on = RecordingLedger(), RecordingLedger()
    simultaneous_run(blocks, 1, "average", ledger=off, policy=OFF)
    simultaneous_run(blocks, 3, "average", ledger=on, policy=OPTED_IN)
    sent, floats = _one_centre(on, "center0")
    pairs = A.simultaneous_pair_distances(on.kept)
    return Outcome(
        "hac.simultaneous",
        sent,
        floats,
        "centroids over >= max(n_min, nfilter_subset)",
        "centroids of one sample (n_min = 1); local merge heights",
        10,
        A.matched_rows(A.simultaneous_records(off.kept), x[:10]),
        A.matched_rows(A.simultaneous_records(on.kept), x[:10]),
        by_design=f"{pairs} exact distances between two patients (local merge heights); "
        "runs only with the centres' opt-in",
    )


def gradual() -> Outcome:
    """Runs on the same data under several settings: differencing the published sums."""
    from fedclust.hac.gradual import gradual_sharing

    g = np.random.default_rng(0)
    x = g.normal(size=(60, 4))
    cen = np.repeat([0, 1, 2], 20)

    def runs(logs) -> list:
        out = []
        for n_min in (3, 5, 10):
            for method in ("average", "complete", "single"):
                led = RecordingLedger()
                gradual_sharing(x, cen, n_min, method, ledger=led, policy=OPTED_IN, logs=logs)
                out.append(led.kept)
        return out

    def attack(kept) -> int:
        got = A.gradual_differencing(kept, cen, len(x))
        mine = {i: v for i, v in got.items() if cen[i] == 0}
        return A.matched_rows(np.array(list(mine.values())) if mine else None, x[cen == 0])

    off = runs(None)
    logs = {k: ReleaseLog(20, 3) for k in range(3)}
    on = runs(logs)
    led = RecordingLedger()
    gradual_sharing(x, cen, 3, "average", ledger=led, policy=OPTED_IN)
    sent, floats = _one_centre(led, "center0", "hac.gradual.centroid")
    return Outcome(
        "hac.gradual",
        sent,
        floats,
        "centroids over >= max(n_min, nfilter_subset); release log across runs",
        "difference the published sums of 9 runs (n_min 3/5/10 × 3 linkages), "
        "sets rebuilt from the merge broadcasts",
        20,
        attack(off),
        attack(on),
        by_design="per-sample distances to public centroids and candidate minima; runs only with "
        f"the centres' opt-in ({sum(lg.refused for lg in logs.values())} releases refused by the "
        "logs)",
    )


def projection() -> Outcome:
    from fedclust.hac.federated import perturbation_clustering, projection_clustering

    g = np.random.default_rng(5)
    x = g.normal(size=(40, 6))
    blocks = [x[:20], x[20:]]
    out = {}
    for name, run in (
        ("hac.projection", lambda led: projection_clustering(
            blocks, "single", "euclidean", 8, 11, ledger=led, policy=OPTED_IN)),
        ("hac.perturbation", lambda led: perturbation_clustering(
            blocks, "single", 11, led, policy=OPTED_IN)),
    ):  # fmt: skip
        led = RecordingLedger()
        run(led)
        y0 = np.asarray(led.received(sender="center0")[0][1]["y"], float)
        y1 = np.asarray(led.received(sender="center1")[0][1]["y"], float)
        # the server knows the inputs of centre 1's rows (a known-input attacker, §4.4)
        rec = A.known_input_inversion(y0, x[20:], y1)
        out[name] = A.matched_rows(rec, x[:20], rtol=1e-4)
        out[name + "_sent"] = _one_centre(led, "center0")
    return out


def sketches() -> list[Outcome]:
    res = projection()
    rows = []
    for name in ("hac.projection", "hac.perturbation"):
        sent, floats = res[name + "_sent"]
        rows.append(Outcome(
            name, sent, floats, "none: one row per sample (opt-in)",
            "known inputs of another centre solve the map; every row inverted",
            20, res[name], res[name],
            by_design="one row per sample; the map hides nothing from a server that knows a "
            "few inputs; runs only with the centres' opt-in",
        ))  # fmt: skip
    return rows


# ---------------------------------------------------------------- ADMM, DEC
def admm() -> Outcome:
    from fedclust.admm.admm import AdmmSettings, admm_distributed

    g = np.random.default_rng(6)
    A_ = np.hstack([g.normal(size=(121, 4)), np.ones((121, 1))])
    b = A_ @ g.normal(size=5) + g.normal(size=121)
    blocks = [("c0", A_[:1], b[:1]), ("c1", A_[1:61], b[1:61]), ("c2", A_[61:], b[61:])]
    s = AdmmSettings("ridge", 0.1, rho=1.0, max_iter=20)

    def attack(led: RecordingLedger) -> int:
        return A.matched_rows(A.admm_rows(led.kept, "c0", 1.0), A_[:1])

    off, on = RecordingLedger(), RecordingLedger()
    admm_distributed(blocks, s, off, policies={k: OFF for k in ("c0", "c1", "c2")})
    admm_distributed(blocks, s, on, policies={k: DEFAULT_POLICY for k in ("c0", "c1", "c2")})
    sent, floats = _one_centre(on, "c1", "admm_local_update")
    n_ab, n_num = _reasons(on)
    return Outcome(
        "admm_local_update",
        sent,
        floats,
        "n >= max(nfilter_subset, d / nfilter_glm)",
        "solve the x-update's optimality condition for the local gradients (∝ the row)",
        1,
        attack(off),
        attack(on),
        abstentions=n_ab,
        numbers_in_reasons=n_num,
    )


def dec() -> Outcome:
    import torch

    from fedclust.dec.federated import DECClient, local_centroid_messages
    from fedclust.dec.model import TSAE, DECModel, get_parameters, set_parameters
    from fedclust.dec.train import embed

    torch.manual_seed(0)
    x = np.random.default_rng(7).random((12, 8)).astype(np.float32)

    def mk() -> DECModel:
        return DECModel(TSAE([8, 6, 3]), 3, 1.0)

    p0 = get_parameters(mk().tsae)
    m = mk()
    set_parameters(m.tsae, p0)
    z = np.asarray(embed(m.tsae, torch.as_tensor(x)))

    def hostile(client: DECClient, led: RecordingLedger) -> int:
        local_centroid_messages([client], p0, k=len(x) - 1, ledger=led, n_init=1, seed=0,
                                min_cluster_size=1)  # fmt: skip
        return A.matched_rows(A.dec_single_embeddings(led.kept), z, rtol=1e-5)

    off, on = RecordingLedger(), RecordingLedger()
    rec_off = hostile(DECClient("center_0", x, mk, disclosure=OFF), off)
    rec_on = hostile(DECClient("center_0", x, mk, k=3, min_cluster_size=5), on)
    honest = RecordingLedger()  # what a centre sends to an honest request (more samples)
    xh = np.random.default_rng(8).random((60, 8)).astype(np.float32)
    local_centroid_messages([DECClient("center_0", xh, mk, k=3, min_cluster_size=3)], p0, k=2,
                            ledger=honest, n_init=1, seed=0, min_cluster_size=3)  # fmt: skip
    sent, floats = _one_centre(honest, "center_0")
    n_ab, n_num = _reasons(on)
    return Outcome(
        "dec_kmeans",
        sent,
        floats,
        "the centre's own k and m (>= nfilter_subset)",
        "hostile request k = n − 1, m = 1: single-patient embeddings (the server holds the "
        "decoder)",
        len(x),
        rec_off,
        rec_on,
        abstentions=n_ab,
        numbers_in_reasons=n_num,
    )


SCENARIOS: dict[str, Callable[[], Outcome | list[Outcome]]] = {
    "km": km,
    "cv": cv,
    "coxph": coxph,
    "genewise": genewise,
    "simultaneous": simultaneous,
    "gradual": gradual,
    "sketches": sketches,
    "admm": admm,
    "dec": dec,
}

COLUMNS = [f for f in Outcome.__dataclass_fields__]


def run_suite(names: list[str] | None = None) -> pd.DataFrame:
    """One row per protocol (:class:`Outcome`), in :data:`SCENARIOS` order."""
    rows = []
    for name in names or list(SCENARIOS):
        out = SCENARIOS[name]()
        rows += [asdict(o) for o in (out if isinstance(out, list) else [out])]
    return pd.DataFrame(rows, columns=COLUMNS)
