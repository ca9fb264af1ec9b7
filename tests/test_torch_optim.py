"""fedclust.torch_optim equals torch.optim bit for bit and does not import torch._dynamo."""

import subprocess
import sys

import pytest
import torch
from torch import nn

from fedclust.torch_optim import SGD, Adam, ReduceLROnPlateau


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


def _train_with_plateau(make_opt, make_sched, lr_of, losses):
    """A net trained with an lr scheduler stepped on a scripted loss sequence."""
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))
    x, y = torch.randn(30, 4), torch.randn(30, 1)
    opt = make_opt(net.parameters())
    sched = make_sched(opt)
    lrs = []
    for metric in losses:
        opt.zero_grad()
        ((net(x) - y) ** 2).mean().backward()
        opt.step()
        sched.step(metric)
        lrs.append(lr_of(opt))
    return lrs, [p.detach().clone() for p in net.parameters()]


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_plateau_scheduler_matches_torch(kind):
    # plateaus, tiny (below-threshold) improvements and real ones: the lr halves several times
    gen = torch.Generator().manual_seed(3)
    losses = [1.0] * 6 + [0.99995] * 5 + [0.5] + (torch.rand(40, generator=gen) + 0.45).tolist()
    ours_opt = (
        (lambda p: SGD(p, lr=0.1, momentum=0.9)) if kind == "sgd" else (lambda p: Adam(p, lr=0.1))
    )
    ref_opt = (
        (lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))
        if kind == "sgd"
        else (lambda p: torch.optim.Adam(p, lr=0.1))
    )
    lrs, w = _train_with_plateau(
        ours_opt, lambda o: ReduceLROnPlateau(o, factor=0.5, patience=3), lambda o: o.lr, losses
    )
    ref_lrs, ref_w = _train_with_plateau(
        ref_opt,
        lambda o: torch.optim.lr_scheduler.ReduceLROnPlateau(o, mode="min", factor=0.5, patience=3),
        lambda o: o.param_groups[0]["lr"],
        losses,
    )
    assert lrs == ref_lrs and len(set(lrs)) >= 3  # exact floats, and the lr did change
    assert all(torch.equal(u, v) for u, v in zip(w, ref_w, strict=True))


class _OptimizerYogi(torch.optim.Optimizer):
    """The Yogi of fedclust.dec.optim before it left torch.optim.Optimizer (reference)."""

    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-3, initial_accumulator=1e-6):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, acc=initial_accumulator))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g, state = p.grad, self.state[p]
                if not state:
                    state["step"] = 0
                    state["m"] = torch.full_like(p, group["acc"])
                    state["v"] = torch.full_like(p, group["acc"])
                state["step"] += 1
                t, m, v = state["step"], state["m"], state["v"]
                m.mul_(b1).add_(g, alpha=1 - b1)
                g2 = g * g
                v.addcmul_(torch.sign(v - g2), g2, value=-(1 - b2))
                denom = v.sqrt() / (1 - b2**t) ** 0.5 + group["eps"]
                p.addcdiv_(m, denom, value=-group["lr"] / (1 - b1**t))


def test_dec_yogi_bit_identical_to_the_optimizer_subclass():
    from fedclust.dec.optim import Yogi

    a = _train(lambda p: Yogi(p, lr=0.02, eps=1e-3))
    b = _train(lambda p: _OptimizerYogi(p, lr=0.02, eps=1e-3))
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
    assert not torch.equal(a[0], _train(lambda p: Yogi(p, lr=0.02), steps=24)[0])


def test_dec_attack_decentral_optimizers_do_not_import_dynamo():
    code = (
        "import sys, torch\nfrom fedclust.dec.optim import make_optimizer\n"
        "from fedclust.torch_optim import ReduceLROnPlateau\n"
        "import fedclust.attacks.reconstruction, fedclust.attacks.property_inference\n"
        "for kind in ('sgd', 'adam', 'yogi'):\n"
        "    w = torch.zeros(3, requires_grad=True)\n"
        "    opt = make_optimizer(kind, [w], 0.1); s = ReduceLROnPlateau(opt, 0.5, 1)\n"
        "    for _ in range(3):\n"
        "        opt.zero_grad(); (w - 1).pow(2).sum().backward(); opt.step(); s.step(1.0)\n"
        "    assert float(w[0]) > 0.05 and opt.lr == 0.05, (kind, w, opt.lr)\n"
        "from fedclust.decentral.model import KerasAdam\n"
        "w = torch.nn.Parameter(torch.zeros(3)); opt = KerasAdam([w], lr=0.1)\n"
        "w.grad = torch.ones(3); opt.step(); assert float(w[0]) < -0.05, w\n"
        "print('torch._dynamo' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
