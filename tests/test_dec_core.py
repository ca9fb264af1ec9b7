"""DEC stage core: TSAE, Yogi, soft assignment/target, k-means init (seed 000 §1.3–1.6)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedclust import torch_optim
from fedclust.dec.model import (
    ARCHS,
    TSAE,
    DECModel,
    encoder_dims,
    get_parameters,
    set_parameters,
    soft_assignment,
    target_distribution,
)
from fedclust.dec.optim import Yogi, make_optimizer
from fedclust.dec.train import kmeans_centroids, scale
from fedclust.errors import ConfigError


def test_tsae_tied_shapes_and_parameter_count():
    m = TSAE(encoder_dims(784, "DEC"))
    assert m.dims == [784, 500, 500, 2000, 10]
    n = sum(p.numel() for p in m.parameters())
    assert n == 1_668_794  # seed 000 §1.3: 1,662,000 tied weights + 3,010 + 3,784 biases
    m54 = TSAE(encoder_dims(54, "CURVES"))
    assert sum(w.numel() for w in m54.weights) == 128_000
    assert sum(w.numel() for w in TSAE(encoder_dims(54, "GOOGLE")).weights) == 681_500
    assert set(ARCHS) == {"DEC", "CURVES", "GOOGLE"}


def test_tsae_decoder_uses_transposed_encoder_weights():
    torch.manual_seed(0)
    m = TSAE([6, 4, 2], hidden_act="relu", final_act="none").eval()
    with torch.no_grad():
        for b in m.dec_bias:
            b.normal_()
    z = torch.randn(3, 2)
    w0, w1 = m.weights
    expected = torch.relu(z @ w1 + m.dec_bias[1]) @ w0 + m.dec_bias[0]
    assert torch.allclose(m.decode(z), expected, atol=1e-6)
    x = torch.rand(3, 6)
    assert torch.allclose(m.encode(x), torch.relu(x @ w0.T + m.enc_bias[0]) @ w1.T + m.enc_bias[1])


def test_bitflip_noise_flips_expected_fraction_only_in_training():
    torch.manual_seed(1)
    m = TSAE([200, 8], input_noise=0.2, noise_kind="bitflip")
    x = (torch.rand(50, 200) < 0.3).float()
    flipped = (m.corrupt(x) != x).float().mean().item()
    assert 0.18 < flipped < 0.22
    assert torch.equal(m.eval().corrupt(x), x)


def test_bad_architecture_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown TSAE architecture"):
        encoder_dims(10, "RESNET")


def test_yogi_matches_its_update_equations():
    torch.manual_seed(0)
    w0 = torch.randn(5)
    w = torch.nn.Parameter(w0.clone())
    lr, b1, b2, eps, acc = 0.05, 0.9, 0.999, 1e-3, 1e-6
    opt = Yogi([w], lr=lr, betas=(b1, b2), eps=eps, initial_accumulator=acc)
    ref = w0.double().clone()
    m = torch.full((5,), acc, dtype=torch.float64)
    v = m.clone()
    for t in range(1, 6):
        g = torch.randn(5)
        w.grad = g.clone()
        opt.step()
        g = g.double()
        m = b1 * m + (1 - b1) * g
        v = v - (1 - b2) * torch.sign(v - g * g) * g * g
        ref = ref - lr / (1 - b1**t) * m / (v.sqrt() / np.sqrt(1 - b2**t) + eps)
        assert torch.allclose(w.detach().double(), ref, atol=1e-6)
    # Yogi's v differs from Adam's when g² < v: it moves additively, not multiplicatively
    assert not torch.allclose(v, 0.999 * v)


def test_make_optimizer_kinds():
    p = [torch.nn.Parameter(torch.zeros(2))]
    assert isinstance(make_optimizer("sgd", p, 0.1), torch_optim.SGD)
    assert make_optimizer("sgd", p, 0.1).momentum == 0.9
    assert isinstance(make_optimizer("adam", p, 0.1), torch_optim.Adam)
    assert isinstance(make_optimizer("yogi", p, 0.1), Yogi)
    with pytest.raises(ConfigError, match="unknown optimizer"):
        make_optimizer("lbfgs", p, 0.1)


def test_soft_assignment_and_target_closed_form():
    torch.manual_seed(0)
    z, mu, alpha = torch.randn(7, 3), torch.randn(4, 3), 5.0
    q = soft_assignment(z, mu, alpha)
    d2 = ((z[:, None, :] - mu[None]) ** 2).sum(-1)
    k = (1 + d2 / alpha) ** (-(alpha + 1) / 2)
    assert torch.allclose(q, k / k.sum(1, keepdim=True), atol=1e-6)
    assert torch.allclose(q.sum(1), torch.ones(7))
    p = target_distribution(q)
    f = q.sum(0)
    assert torch.allclose(p, (q**2 / f) / (q**2 / f).sum(1, keepdim=True), atol=1e-6)


def test_kl_gradient_matches_dec_equations():
    """∂L/∂z_i of eq. 2.21 (autograd vs closed form), P held fixed."""
    torch.manual_seed(0)
    alpha = 1.0
    z = torch.randn(6, 2, dtype=torch.float64, requires_grad=True)
    mu = torch.randn(3, 2, dtype=torch.float64)
    q = soft_assignment(z, mu, alpha)
    p = target_distribution(q).detach()
    loss = (p * (p.log() - q.log())).sum()
    (gz,) = torch.autograd.grad(loss, z)
    diff = z.detach()[:, None, :] - mu[None]
    kern = 1 / (1 + (diff**2).sum(-1) / alpha)
    expected = ((alpha + 1) / alpha) * ((kern * (p - q.detach()))[..., None] * diff).sum(1)
    assert torch.allclose(gz, expected, atol=1e-8)


def test_kmeans_empirical_centroids_with_scaler():
    gen = np.random.default_rng(0)
    z = np.concatenate([gen.normal(0, 0.1, (30, 2)) + [5, 0], gen.normal(0, 0.1, (30, 2)) + [0, 5]])
    mu, lab = kmeans_centroids(z, 2, "normal-l2", n_init=5, seed=0)
    for j in range(2):
        assert np.allclose(mu[j], z[lab == j].mean(0), atol=1e-5)  # unscaled empirical means
    assert np.allclose(np.linalg.norm(scale(z, "normal-l2"), axis=1), 1)
    assert np.allclose(np.abs(scale(z, "normal-l1")).sum(1), 1)


def test_parameters_roundtrip():
    m = DECModel(TSAE([5, 3, 2]), 2)
    ps = get_parameters(m)
    m2 = DECModel(TSAE([5, 3, 2]), 2)
    set_parameters(m2, ps)
    assert all(np.array_equal(a, b) for a, b in zip(ps, get_parameters(m2), strict=False))
