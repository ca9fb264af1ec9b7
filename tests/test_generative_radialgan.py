"""RadialGAN (seed 003 §4, D6.2 ch. 5): with one domain the cycle loss is the autoencoder loss;
α_ij as D6.2 and as the authors' code define it; the federated training (codes out, gradients
with respect to the codes back) is the one-process joint step of eq. 5.7; latent codes are the
only cross-centre payload (checked on the ledger); a centre below the floor abstains."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedclust.federation import Ledger, federate
from fedclust.federation.disclosure import DisclosurePolicy
from fedclust.generative import radialgan as R
from fedclust.generative import server as S
from fedclust.generative.centre import RadialCentre
from fedclust.generative.nets import init_module

ARCH = R.Arch(latent=3, hidden=(8,))
CFG = {"lr": 0.01, "lam": 2.0, "gan_loss": "nonsaturating", "classifier_c": 1.0}
#: the centres' own opt-in to release latent codes (and their gradients), one row per sample
OPT_IN = DisclosurePolicy(allow_per_sample=("radialgan_codes", "radialgan_code_grads"))


@pytest.mark.parametrize("labels", R.LABELS)
def test_one_domain_cycle_loss_is_the_autoencoder_loss(labels):
    node = init_module(lambda: R.Domain(4, ARCH, labels), 0, "one")
    g = np.random.default_rng(0)
    real = R.xy(g.random((20, 4)), (g.random(20) < 0.5).astype(np.float32))
    z = node.encode(real)
    cyc = R.cycle_loss(node, real, z, [], [])
    manual = torch.sqrt(((real - node.decode(node.encode(real))) ** 2).sum(1)).mean()
    torch.testing.assert_close(cyc, R.autoencoder_loss(node, real))
    torch.testing.assert_close(cyc, manual)
    # and the whole F/G objective of a lone domain is λ times it (no adversarial term)
    torch.testing.assert_close(R.generator_loss(node, real, z, [], [], 2.0, "minimax"), 2 * cyc)


def test_alpha_as_d62_and_as_the_authors_code():
    a = R.alpha([100, 50, 50], "d62")
    np.testing.assert_allclose(a, [[0, 0.5, 0.5], [2 / 3, 0, 1 / 3], [2 / 3, 1 / 3, 0]])
    np.testing.assert_allclose(a.sum(1), 1.0)
    np.testing.assert_allclose(R.alpha([100, 50, 50], "authors"),
                               [[0, 0.5, 0.5], [0.5, 0, 0.5], [0.5, 0.5, 0]])  # fmt: skip
    np.testing.assert_allclose(R.alpha([7], "d62"), [[0.0]])


def _centres(sizes=(40, 30, 25), dims=(5, 4, 6), labels="code", floor=3, policy=OPT_IN):
    out = []
    for i, (n, p) in enumerate(zip(sizes, dims, strict=True)):
        g = np.random.default_rng(i)
        x = g.normal(size=(n, p)) + np.arange(p)
        y = (x[:, 0] + g.normal(size=n) > 0.5).astype(int)
        y[:2] = [0, 1]

        def build(q, i=i):
            return init_module(lambda: R.Domain(q, ARCH, labels), 4, "c", i)

        out.append(RadialCentre(f"c{i}", x, y, x[:10], y[:10], build, CFG, 100 + i, floor, policy))
    return out


@pytest.mark.parametrize("labels", R.LABELS)
def test_federated_iterations_equal_the_joint_step_of_eq_5_7(labels):
    fed, ref = _centres(labels=labels), _centres(labels=labels)
    led = Ledger()
    federate(fed, lambda px: S.radialgan(px, 3, 8, "d62", 3), ledger=led)
    a = R.alpha([c.n_samples for c in ref], "d62")
    for _ in range(3):
        batches = [c.batch(8) for c in ref]
        R.centralized_step(
            [c.node for c in ref],
            [c.d_opt for c in ref],
            [c.g_opt for c in ref],
            batches,
            a,
            CFG["lam"],
            CFG["gan_loss"],
        )
    for cf, cr in zip(fed, ref, strict=True):
        for pf, pr in zip(cf.node.parameters(), cr.node.parameters(), strict=True):
            torch.testing.assert_close(pf, pr, atol=1e-6, rtol=1e-5)
    changed = init_module(lambda: R.Domain(5, ARCH, labels), 4, "c", 0)
    assert not torch.allclose(next(changed.parameters()), next(fed[0].node.parameters()))


def test_latent_codes_are_the_only_cross_centre_payload():
    centres = _centres(sizes=(40, 30, 2))
    led = Ledger()
    res = federate(centres, lambda px: S.radialgan(px, 2, 8, "authors", 3), ledger=led)
    t = led.messages()
    sent = t[t["sender"] != "server"]
    assert set(sent["protocol"]) == {"radialgan_codes", "radialgan_code_grads",
                                     "radialgan_applied", "radialgan_evaluation"}  # fmt: skip
    width = ARCH.latent + 1  # the code: F(x, y) and the label coordinate
    batch = sent[(sent["protocol"] == "radialgan_codes") & (sent["round"] <= 2)]
    assert (batch["floats"] == 8 * width + 1).all()  # whatever the centre's feature count
    full = sent[(sent["protocol"] == "radialgan_codes") & (sent["round"] == 3)]
    assert sorted(full["floats"]) == sorted([40 * width + 1, 30 * width + 1])
    grads = sent[sent["protocol"] == "radialgan_code_grads"]
    assert (grads["floats"] == 8 * width + 2).all()  # one other centre's codes + loss + n
    evals = sent[sent["protocol"] == "radialgan_evaluation"]
    assert len(evals) == 2 and (evals["floats"] == 5).all()
    # the centre with 2 rows sent nothing and abstained from every exchange
    assert "c2" not in set(t["sender"]) and set(led.abstentions()["center"]) == {"c2"}
    assert set(res["evaluation"]) == {"c0", "c1"}
    for ev in res["evaluation"].values():
        assert 0 <= ev["auc_local"] <= 1 and 0 <= ev["auc_augmented"] <= 1


def test_without_the_centres_opt_in_no_code_leaves_and_each_scores_alone():
    centres = _centres(policy=DisclosurePolicy())
    led = Ledger()
    res = federate(centres, lambda px: S.radialgan(px, 3, 8, "d62", 3), ledger=led)
    sent = led.messages()
    sent = sent[sent["sender"] != "server"]
    assert not (sent["protocol"] == "radialgan_codes").any()
    assert res["released"] == [] and res["losses"] == []
    assert set(led.abstentions()["protocol"]) == {"radialgan_codes"}
    for ev in res["evaluation"].values():  # no augmentation: the same model twice
        assert ev["virtual"] == 0 and ev["auc_local"] == ev["auc_augmented"]
