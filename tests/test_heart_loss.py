"""Issue 16: the reported heart loss is Keras' (spec §3.3, §4.0), checked against hand-computed
references: the L1/L2 penalty and its gradient (TF: d|w|/dw = sign(w), sign(0) = 0), one training
step's loss, Keras ``evaluate`` (batches of 32, loss metric weighted by batch size) and the
thesis' n_train-weighted mean over clients (the author's ``weighted_mean``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from fedclust.decentral.model import HeartNet
from fedclust.decentral.simulate import weighted_summary
from fedclust.decentral.training import Trainer


def _kernel() -> np.ndarray:
    k = np.linspace(-0.2, 0.2, 20 * 256, dtype=np.float32).reshape(20, 256)
    k[0, :7] = 0.0  # exact zeros: TF's Abs gradient is sign(0) = 0
    return k


def _bce(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-row BCE from logits, stable form (tf.nn.sigmoid_cross_entropy_with_logits)."""
    return np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))


def test_penalty_value_and_gradient_are_keras_l1_l2():
    torch.manual_seed(0)
    m = HeartNet()
    w = m.get_weights()
    w[0] = _kernel()
    m.set_weights(w)
    pen = m.penalty()
    pen_v = float(pen.detach())
    k = _kernel().astype(np.float64)
    assert abs(pen_v - (0.01 * np.abs(k).sum() + 0.01 * np.square(k).sum())) < 1e-4
    # by hand: 5120 points evenly on [-0.2, 0.2]: Σ|k| ≈ 5120·0.1 = 512, Σk² ≈ 5120·0.04/3 = 68.27,
    # minus the 7 zeroed entries near -0.2 (≈ 1.4 and 0.28): 0.01·510.7 + 0.01·68.0 = 5.787
    assert abs(pen_v - 5.787) < 2e-3
    pen.backward()
    g = m.dense[0].weight.grad.T.numpy()  # torch (out, in) -> Keras (in, out)
    np.testing.assert_allclose(g, 0.01 * np.sign(k) + 0.02 * k, rtol=1e-5, atol=1e-8)
    assert not g[0, :7].any()  # zero weights get no L1 push, as in TF
    others = [p.grad for p in m.parameters() if p is not m.dense[0].weight]
    assert all(x is None or not x.any() for x in others)  # only the first kernel is penalised


def test_evaluate_is_keras_batched_loss_metric():
    """Keras ``evaluate``: per batch of 32, mean BCE + penalty; the loss metric averages batches
    weighted by their size. The penalty is the same in every batch, so that equals the mean BCE
    over all rows + penalty; the model is in inference mode (BN moving statistics)."""
    torch.manual_seed(1)
    tr = Trainer(20, 1e-3, "fresh_each_fit", 0)
    w = tr.model.get_weights()
    w[0] = _kernel()
    rng = np.random.default_rng(3)
    w[4] = rng.normal(0, 0.1, 256).astype(np.float32)  # moving mean
    w[5] = rng.uniform(0.5, 2.0, 256).astype(np.float32)  # moving variance
    X = rng.random((74, 20), dtype=np.float32)
    y = (rng.random(74) < 0.4).astype(np.float32)
    r = tr.evaluate(w, torch.from_numpy(X), torch.from_numpy(y))
    tr.model.eval()
    with torch.no_grad():
        z = tr.model(torch.from_numpy(X)).numpy().astype(np.float64)
    k = _kernel().astype(np.float64)
    pen = 0.01 * np.abs(k).sum() + 0.01 * np.square(k).sum()
    per_row = _bce(z, y)
    batches = [slice(s, s + 32) for s in range(0, 74, 32)]  # 32, 32, 10
    keras = sum((per_row[b].mean() + pen) * len(per_row[b]) for b in batches) / 74
    assert abs(r.loss_total - keras) < 1e-4
    assert abs(r.loss_bce - per_row.mean()) < 1e-5
    assert abs((r.loss_total - r.loss_bce) - pen) < 1e-4


def test_training_step_on_the_penalty_alone_is_keras_adam():
    """One Keras ``fit`` step where the BCE cannot move the first kernel (all-zero inputs: its
    BCE gradient Xᵀδ is exactly 0; every layer outputs 0, so p = ½ and BCE = ln 2): the loss is
    ln 2 + penalty and the first kernel takes Adam's first step on the penalty gradient
    g = 0.01·sign(w) + 0.02·w, w − lr·√(1−β₂)/(1−β₁)·(1−β₁)g / (√((1−β₂)g²) + ε), ε = 1e-7; an
    exact zero stays at zero (TF: sign(0) = 0)."""
    torch.manual_seed(2)
    tr = Trainer(20, 1e-3, "fresh_each_fit", 0)
    w0 = tr.model.get_weights()
    w0[0] = _kernel()
    X = torch.zeros(14, 20)
    y = torch.tensor([0.0, 1.0] * 7)
    w1, loss = tr.fit(w0, X, y, epochs=1, batch_size=14, owner="a")
    k = _kernel().astype(np.float64)
    pen = 0.01 * np.abs(k).sum() + 0.01 * np.square(k).sum()
    assert abs(loss - (np.log(2.0) + pen)) < 1e-5
    g = 0.01 * np.sign(k) + 0.02 * k
    step = 1e-3 * np.sqrt(1 - 0.999) / (1 - 0.9) * (0.1 * g) / (np.sqrt(0.001 * g * g) + 1e-7)
    np.testing.assert_allclose(w1[0], k - step, rtol=0, atol=1e-7)
    assert not w1[0][0, :7].any()
    # the biases of the first layer move by the BCE only; here its gradient is 0 as well
    np.testing.assert_array_equal(w1[1], w0[1])


def test_weighted_summary_is_the_authors_weighted_mean():
    """Thesis Table 4.1 averages clients by n_train (``weighted_mean(n_i, metric_list)``)."""
    n = [114, 219, 103, 113, 138]
    loss = [0.891097, 0.349801, 0.372078, 0.845896, 0.488078]
    m = pd.DataFrame({"round": 1, "client": range(1, 6), "n_train": n, "loss_total": loss,
                      "loss_bce": loss, "accuracy": 0.5, "auc": 0.5})  # fmt: skip
    s = weighted_summary(m).iloc[0]
    hand = sum(a * b for a, b in zip(n, loss, strict=True)) / sum(n)
    assert abs(s["loss_total"] - hand) < 1e-12
    assert abs(s["loss_total"] - 0.552339) < 1e-6
    assert abs(s["loss_total_simple"] - np.mean(loss)) < 1e-12
