"""Who sends weights to whom: the thesis' ``clients`` → ``clients_send`` lists (spec §4.3–4.9).

``clients[i]`` names the sender(s) (1-based, an int or a list) whose weights go to receiver
``clients_send[i] = i + 1``. A round's exchange is expressed as a symbolic *plan*: for every
receiver, the weight sets it averages — ``("old", k)`` (client k's weights before this round's
training) or ``("new", k)`` (client k's weights after training) — with their sample weights, and
the messages that travel. Two modes:

- ``as_described``: receiver r averages its own new weights with its senders' new weights.
- ``as_published``: the effective flow of the published code (spec §4.9): every position's list
  starts with its *old* weights, client ``idx+1`` pushes its new weights to position
  ``clients[idx]-1`` (the reverse direction) and to its own, and ``ave_weights`` keeps only the
  first ``len(samples_len)`` entries.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

APPROACHES = ("FL", "FL_SMA", "RAR", "GL_conditional", "GL_random", "customized")
PEER_TO_PEER = ("RAR", "GL_conditional", "GL_random", "customized")
MODES = ("as_described", "as_published")
#: the published notebooks fit GL and customized with ``validation_split=0.15`` (spec §4.9)
PUBLISHED_VALIDATION_SPLIT = {"GL_conditional": 0.15, "GL_random": 0.15, "customized": 0.15}

Entry = int | list[int]
Ref = tuple[str, int]  # ("old" | "new", 1-based client)


def senders(entry: Entry) -> list[int]:
    return list(entry) if isinstance(entry, list | tuple) else [int(entry)]


def fixed_topology(approach: str, n: int) -> list[Entry]:
    """The thesis' fixed lists for 5 clients, generalised to ``n`` clients.

    RAR ``[5,1,2,3,4]`` (r receives from r−1); customized ``[[4,5],[5,1],[1,2],[2,3],[3,4]]``
    (r from r−2 and r−1); conditional GL ``[3,1,[2,5],3,4]`` (1 from 3, 3 from 2 and n, others
    from r−1; for n = 4 this is ``[3,1,[2,4],3]``).
    """
    if approach == "RAR":
        return [n] + list(range(1, n))
    if approach == "customized":
        return [[(r - 3) % n + 1, (r - 2) % n + 1] for r in range(1, n + 1)]
    if approach == "GL_conditional":
        if n < 4:
            raise ValueError("conditional gossip needs at least 4 clients")
        out: list[Entry] = [3] + list(range(1, n))
        out[2] = [2, n]
        return out
    raise ValueError(f"no fixed topology for {approach!r}")


def derangement(rnd: random.Random, clients: list[int]) -> list[int]:
    """The thesis' random GL: ``random.shuffle`` the persistent list until no client is its own
    sender (rejection sampling, spec §4.7). Shuffles ``clients`` in place and returns a copy."""
    while True:
        rnd.shuffle(clients)
        if all(c != i + 1 for i, c in enumerate(clients)):
            return list(clients)


@dataclass
class Plan:
    """One round's exchange: per receiver (0-based position) the refs and weights it averages."""

    entries: list[list[Ref]] = field(default_factory=list)
    weights: list[list[int]] = field(default_factory=list)
    #: (sender, receiver, used): every weight message between different clients
    messages: list[tuple[int, int, bool]] = field(default_factory=list)


def plan_round(clients: list[Entry], n: list[int], mode: str) -> Plan:
    """The symbolic exchange of one round for ``clients`` (receivers ``1..len(clients)``)."""
    k = len(clients)
    plan = Plan()
    if mode == "as_described":
        for r in range(1, k + 1):
            src = senders(clients[r - 1])
            plan.entries.append([("new", r)] + [("new", s) for s in src])
            plan.weights.append([n[r - 1]] + [n[s - 1] for s in src])
            plan.messages += [(s, r, True) for s in src]
        return plan
    if mode != "as_published":
        raise ValueError(f"mode must be one of {MODES}")
    lists: list[list[Ref]] = [[("old", r)] for r in range(1, k + 1)]
    used_len = [len(senders(clients[i])) + 1 for i in range(k)]  # len(samples_len)
    for idx in range(k):
        me = idx + 1
        for s in senders(clients[idx]):
            pos = s - 1
            plan.messages.append((me, s, len(lists[pos]) < used_len[pos]))
            lists[pos].append(("new", me))
        lists[idx].append(("new", me))
    for idx in range(k):
        plan.entries.append(lists[idx][: used_len[idx]])
        plan.weights.append([n[s - 1] for s in senders(clients[idx])] + [n[idx]])
    return plan
