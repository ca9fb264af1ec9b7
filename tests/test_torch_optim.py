"""fedclust.torch_optim equals torch.optim bit for bit and does not import torch._dynamo."""

import subprocess
import sys

import pytest
import torch
from torch import nn

from fedclust.torch_optim import SGD, Adam


def _train(make, seed=0, steps=25):
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(7, 5), nn.ReLU(), nn.Linear(5, 1))
    x, y = torch.randn(40, 7), torch.randn(40, 1)
    opt = make(net.parameters())
    for s in range(steps):
        opt.zero_grad()
        if s == 3:  # a step where one parameter has no gradient (frozen for one step)
            net[2].bias.requires_grad_(False)
        loss = ((net(x) - y) ** 2).mean() + 1e-3 * net[0].weight.abs().sum()
        loss.backward()
        opt.step()
        net[2].bias.requires_grad_(True)
    return [p.detach().clone() for p in net.parameters()]


@pytest.mark.parametrize(
    ("ours", "ref"),
    [
        (lambda p: Adam(p, lr=0.03), lambda p: torch.optim.Adam(p, lr=0.03)),
        (
            lambda p: Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
            lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
        ),
        (lambda p: SGD(p, lr=0.05), lambda p: torch.optim.SGD(p, lr=0.05)),
        (
            lambda p: SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01),
            lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01),
        ),
    ],
)
def test_bit_identical_to_torch_optim(ours, ref):
    a, b = _train(ours), _train(ref)
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
    assert not torch.equal(a[0], _train(ours, steps=24)[0])  # the steps do change the weights


def test_no_dynamo_import():
    code = (
        "import sys, torch\nfrom fedclust.torch_optim import Adam\n"
        "w = torch.zeros(3, requires_grad=True)\nopt = Adam([w], lr=0.1)\n"
        "for _ in range(3):\n    opt.zero_grad(); (w - 1).pow(2).sum().backward(); opt.step()\n"
        "assert float(w[0]) > 0.2, w\nprint('torch._dynamo' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_bad_settings_raise():
    with pytest.raises(ValueError, match="invalid Adam"):
        Adam([torch.zeros(1, requires_grad=True)], lr=-1)
