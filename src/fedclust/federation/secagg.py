"""Secure aggregation: the server learns the sum over the centres, never one centre's message
(issue 24; Bonawitz et al., "Practical Secure Aggregation for Privacy-Preserving Machine
Learning", CCS 2017, §4, without its threshold secret sharing).

**Encoding.** A centre's numbers x become fixed-point integers modulo 2^64,
``enc(x) = round(x · 2^f) mod 2^64`` (``frac_bits`` f, default 32: resolution 2^-32 ≈ 2.3e-10;
every |x| and the sum must stay below 2^(63-f) / K for K centres, else :func:`encode` refuses).
Sums of encodings decode *exactly* to the sum of the rounded values:
``dec(Σ_k enc(x_k)) = Σ_k round(x_k 2^f) / 2^f``.

**Masks.** In round r with cohort C (the centres the server asked), centre i sends

    y_i = enc(x_i) + PRG(b_i^r) + Σ_{j ∈ C, j ≠ i} σ_ij · PRG(k_ij^r)      (mod 2^64)

with σ_ij = +1 if i < j (string order of the ids), −1 otherwise; k_ij^r = HMAC(s_ij, r) where
s_ij is the pair's agreed secret, and b_i^r = HMAC(b_i, r) the centre's self-mask from a secret
only it holds. Over the cohort the pair masks cancel: Σ_i y_i = Σ_i enc(x_i) + Σ_i PRG(b_i^r).
The server then asks every centre that sent a share for its own round key b_i^r (one
*unmask* message each) and subtracts PRG(b_i^r).

**Dropouts.** A centre j that was asked but sent nothing (it abstained, was refused by its own
guard, or was lost) leaves its pair masks in the others' shares. The survivors reveal, in the
same unmask message, the *round* keys k_ij^r they share with each dropped j (never s_ij, so
later rounds stay masked); the server removes σ_ij PRG(k_ij^r). j's own share, should it
arrive late, stays masked by PRG(b_j^r), which nobody else can compute. A survivor that does
not answer the unmask request stops the round: :class:`SecAggAborted` names it (Bonawitz et al.
recover even then through Shamir shares of b_i; not implemented).

**Key agreement** (:data:`KEY_AGREEMENT`): ``x25519`` when the ``cryptography`` package is
installed (it is a dependency of Flower): every centre draws an X25519 key pair per session
(``os.urandom``; tests may set ``centre.secagg_seed`` for reproducible keys), advertises its
public key through the server, and derives s_ij = HMAC-SHA256(X25519(sk_i, pk_j), ids) — the
server, holding only public keys, cannot compute any s_ij. Without ``cryptography``:
``seeded``, a simulation only: s_ij is derived from the two public values, so masks still
cancel and the ledger still holds uniform shares, but a server could recompute them.
**PRG**: AES-256 in counter mode (``cryptography``), else numpy's Philox keyed by the key.

**What a share reveals.** y_i is uniform modulo 2^64 whatever x_i is, as soon as one of its
mask terms is uniform and unknown to the server (tested statistically in
``tests/test_secagg.py``). Results do not depend on the keys: the masks cancel exactly, so a
run's tables are reproducible with fresh random keys.

**Trust model.** Honest-but-curious server (it follows the protocol; Bonawitz et al.'s
consistency round against a server that lies about who dropped is not implemented) and centres
that do not collude with it. Every centre answers one unmask request per round.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedclust.errors import DisclosureError, FedclustError, InputDataError

from .ledger import SECAGG_FIELD, Message, Protocol

try:  # the real key agreement and PRG
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.x25519 import (
        X25519PrivateKey,
        X25519PublicKey,
    )
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    KEY_AGREEMENT = "x25519"
except ImportError:  # pragma: no cover - cryptography ships with Flower
    KEY_AGREEMENT = "seeded"

RING_BITS = 64
DEFAULT_FRAC_BITS = 32

# ---------------------------------------------------------------- the protocols
ADVERTISE_REQUEST = Protocol("secagg_advertise_request", {"session": "metadata"})
ADVERTISE = Protocol("secagg_advertise", {"public_key": "metadata"})
PEERS_REQUEST = Protocol(
    "secagg_peers_request", {"session": "metadata", "ids": "metadata", "public_keys": "metadata"}
)
PEERS = Protocol("secagg_peers", {"peers": "metadata"})
UNMASK_REQUEST = Protocol(
    "secagg_unmask_request", {"session": "metadata", "round": "metadata", "dropped": "metadata"}
)
UNMASK = Protocol("secagg_unmask", {"self_key": "metadata", "pair_keys": "metadata"})
#: the core's own methods, answered by every centre (method -> its reply protocol)
CONTROL = {"secagg_advertise": ADVERTISE, "secagg_peers": PEERS, "secagg_unmask": UNMASK}


class SecAggAborted(FedclustError):
    """A secure sum cannot be completed (a survivor did not help unmask it)."""


# ---------------------------------------------------------------- fixed point
def encode(x: Any, frac_bits: int = DEFAULT_FRAC_BITS, terms: int = 1) -> np.ndarray:
    """``round(x · 2^frac_bits)`` as uint64 (two's complement modulo 2^64). Refuses values
    whose sum over ``terms`` centres could leave the ring's signed range."""
    v = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise InputDataError(
            "a value to be securely summed is not finite",
            where="secure aggregation",
            fix="check the local model for NaN / inf before aggregating",
        )
    limit = 2.0 ** (RING_BITS - 1 - frac_bits) / max(int(terms), 1)
    if v.size and float(np.abs(v).max()) >= limit:
        raise InputDataError(
            f"a value of magnitude {float(np.abs(v).max()):.3g} exceeds the fixed-point range "
            f"{limit:.3g} ({frac_bits} fractional bits, {terms} centres)",
            where="secure aggregation",
            fix="lower federation.privacy frac_bits",
        )
    return np.rint(v * 2.0**frac_bits).astype(np.int64).view(np.uint64)


def decode(s: np.ndarray, frac_bits: int = DEFAULT_FRAC_BITS) -> np.ndarray:
    """The float64 values of fixed-point integers (signed, two's complement)."""
    return np.asarray(s, dtype=np.uint64).view(np.int64).astype(np.float64) / 2.0**frac_bits


# ---------------------------------------------------------------- keys and PRG
def kdf(secret: bytes, *labels: object) -> bytes:
    """A 32-byte key from ``secret`` and labels (HMAC-SHA256 as a PRF)."""
    return hmac.new(secret, repr(tuple(map(str, labels))).encode(), hashlib.sha256).digest()


def prg(key: bytes, n: int) -> np.ndarray:
    """``n`` pseudo-random uint64 from a 32-byte key: AES-256-CTR, else Philox."""
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    if KEY_AGREEMENT == "x25519":
        enc = Cipher(algorithms.AES(key), modes.CTR(bytes(16))).encryptor()
        buf = enc.update(bytes(8 * n)) + enc.finalize()
        return np.frombuffer(buf, dtype="<u8").view(np.uint64)  # read-only, no copy
    bits = np.random.Philox(key=int.from_bytes(key[:16], "little"))
    return bits.random_raw(n).astype(np.uint64)


class KeyPair:
    """A centre's key-agreement pair (X25519, or the seeded stand-in; module docstring)."""

    def __init__(self, private: bytes):
        self._private = bytes(private)
        if KEY_AGREEMENT == "x25519":
            self._sk = X25519PrivateKey.from_private_bytes(self._private)
            raw = serialization.Encoding.Raw
            self.public = self._sk.public_key().public_bytes(raw, serialization.PublicFormat.Raw)
        else:  # pragma: no cover
            self.public = hashlib.sha256(b"public" + self._private).digest()

    def agree(self, peer_public: bytes, own: str, peer: str, session: str) -> bytes:
        """The pair's secret s_ij (both ends compute the same bytes)."""
        a, b = sorted([own, peer])
        if KEY_AGREEMENT == "x25519":
            shared = self._sk.exchange(X25519PublicKey.from_public_bytes(bytes(peer_public)))
        else:  # pragma: no cover
            shared = hashlib.sha256(b"".join(sorted([self.public, bytes(peer_public)]))).digest()
        return kdf(shared, "pair", session, a, b)


def _secret(centre: Any, cid: str, session: str, what: str) -> bytes:
    seed = getattr(centre, "secagg_seed", None)
    if seed is None:
        return os.urandom(32)
    return hashlib.sha256(repr(("secagg", int(seed), cid, session, what)).encode()).digest()


def _key_bytes(a: Any) -> bytes:
    return np.asarray(a, dtype=np.uint8).tobytes()


# ---------------------------------------------------------------- message layout
def _numeric_keys(message: Mapping[str, Any], protocol: Protocol) -> list[str]:
    """The fields a share masks, in mask order: ``protocol``'s declared non-metadata fields
    present in ``message``. A centre's guard sends no other field; a key a server-side wrapper
    adds to a reply after it arrived (unmasked, undeclared: e.g. fedcref's group index) is no
    part of the share, and counting it would shift every mask against the centre's layout."""
    return sorted(
        k for k in message if k != SECAGG_FIELD and protocol.kind(k) not in (None, "metadata")
    )


def flatten(message: Mapping[str, Any], keys: Sequence[str]) -> tuple[np.ndarray, list]:
    """The values of ``keys`` as one float64 vector and its layout (key, shapes, is_list)."""
    parts, layout = [], []
    for k in keys:
        v = message[k]
        items = list(v) if isinstance(v, list | tuple) else [v]
        arrs = [np.asarray(a, dtype=np.float64) for a in items]
        layout.append((k, [a.shape for a in arrs], isinstance(v, list | tuple)))
        parts.extend(a.ravel() for a in arrs)
    return (np.concatenate(parts) if parts else np.zeros(0)), layout


def unflatten(vec: np.ndarray, layout: list) -> dict[str, Any]:
    """:func:`flatten`'s inverse (any dtype): 0-d entries stay 0-d arrays."""
    out, pos = {}, 0
    for k, shapes, is_list in layout:
        arrs = []
        for shape in shapes:
            size = int(np.prod(shape, dtype=np.int64))
            arrs.append(vec[pos : pos + size].reshape(shape))
            pos += size
        out[k] = arrs if is_list else arrs[0]
    return out


# ---------------------------------------------------------------- the centre side
@dataclass
class _Session:
    keys: KeyPair
    self_secret: bytes
    pair: dict[str, bytes] = field(default_factory=dict)
    cohorts: dict[int, tuple[str, ...]] = field(default_factory=dict)
    revealed: set[int] = field(default_factory=set)


def _sessions(centre: Any) -> dict[str, _Session]:
    st = getattr(centre, "_fedclust_secagg", None)
    if st is None:
        st = {}
        object.__setattr__(centre, "_fedclust_secagg", st)
    return st


def _refuse(what: str, cid: str, protocol: str, rule: str) -> DisclosureError:
    return DisclosureError(
        what, center=cid, protocol=protocol, rule=rule, fix="the centre abstains"
    )


def control(centre: Any, cid: str, method: str, config: Mapping[str, Any]) -> Message:
    """A centre's answer to the core's own secure-aggregation methods (:data:`CONTROL`)."""
    sid = str(config.get("session", ""))
    st = _sessions(centre)
    if method == "secagg_advertise":
        st[sid] = _Session(
            KeyPair(_secret(centre, cid, sid, "x25519")), _secret(centre, cid, sid, "self")
        )
        return {"public_key": np.frombuffer(st[sid].keys.public, dtype=np.uint8).copy()}
    sess = st.get(sid)
    if sess is None:
        raise _refuse("unknown secure-aggregation session", cid, method, "secagg-session")
    if method == "secagg_peers":
        ids = [str(i) for i in config["ids"]]
        keys = np.asarray(config["public_keys"], dtype=np.uint8).reshape(len(ids), -1)
        for j, pk in zip(ids, keys, strict=True):
            if j != cid:
                sess.pair[j] = sess.keys.agree(pk.tobytes(), cid, j, sid)
        return {"peers": len(sess.pair)}
    if method == "secagg_unmask":
        r = int(config["round"])
        dropped = [str(j) for j in config.get("dropped") or []]
        cohort = sess.cohorts.get(r)
        if cohort is None or r in sess.revealed:
            raise _refuse(
                "no share of this round, or its keys were already revealed",
                cid,
                method,
                "secagg-one-unmask-per-round",
            )
        if cid in dropped or not set(dropped) <= set(cohort):
            raise _refuse(
                "the dropped set is not part of this round's cohort",
                cid,
                method,
                "secagg-dropped-in-cohort",
            )
        sess.revealed.add(r)
        pair = [np.frombuffer(kdf(sess.pair[j], "round", r), dtype=np.uint8) for j in dropped]
        return {
            "self_key": np.frombuffer(kdf(sess.self_secret, "self", r), dtype=np.uint8).copy(),
            "pair_keys": np.stack(pair) if pair else np.zeros((0, 32), dtype=np.uint8),
        }
    raise _refuse(f"unknown method {method!r}", cid, method, "declared-methods-only")


def sign(i: str, j: str) -> int:
    """σ_ij: +1 for the smaller id of the pair, −1 for the larger."""
    return 1 if i < j else -1


def mask(
    centre: Any,
    cid: str,
    message: Mapping[str, Any],
    protocol: Protocol,
    session: str,
    round: int,
    cohort: Sequence[str],
    frac_bits: int = DEFAULT_FRAC_BITS,
) -> Message:
    """Centre ``cid``'s share of ``message`` (a checked plain message of ``protocol``) for
    ``round`` of ``session`` with ``cohort``: every non-metadata field masked (module
    docstring), metadata kept, plus the :data:`~.ledger.SECAGG_FIELD` marker."""
    sess = _sessions(centre).get(session)
    name = protocol.name
    if sess is None:
        raise _refuse("unknown secure-aggregation session", cid, name, "secagg-session")
    cohort = tuple(str(c) for c in cohort)
    missing = [j for j in cohort if j != cid and j not in sess.pair]
    if cid not in cohort or missing or round in sess.cohorts:
        raise _refuse(
            "not a member of this round's cohort, a peer without a key, or a second "
            "share of the round",
            cid,
            name,
            "secagg-cohort",
        )
    keys = _numeric_keys(message, protocol)
    vec, layout = flatten(message, keys)
    share = encode(vec, frac_bits, terms=len(cohort))
    share += prg(kdf(sess.self_secret, "self", round), share.size)
    for j in cohort:
        if j != cid:
            m = prg(kdf(sess.pair[j], "round", round), share.size)
            if sign(cid, j) > 0:
                share += m
            else:
                share -= m
    sess.cohorts[round] = cohort
    out = unflatten(share, layout)
    out.update({k: message[k] for k in message if k not in out})  # metadata, unmasked
    out[SECAGG_FIELD] = [f"{session}#{int(round)}"]  # one string: any transport carries it
    return out


# ---------------------------------------------------------------- the server side
_SESSION_IDS = itertools.count(1)


@dataclass
class SecureAggregator:
    """The server's side of secure aggregation over ``proxies`` (client proxies: ``cid``,
    ``call``): :meth:`setup` (key advertisement and distribution, round 0), :meth:`instruction`
    (what a round's request carries) and :meth:`unmask` (sum of the shares, dropouts recovered,
    decoded). Only the shares, public keys and round keys pass the ledger."""

    proxies: Sequence[Any]
    frac_bits: int = DEFAULT_FRAC_BITS
    session: str = ""
    members: list[str] = field(default_factory=list)
    unmask_messages: int = 0

    def __post_init__(self) -> None:
        if not self.session:
            self.session = f"secagg-{next(_SESSION_IDS)}"

    def setup(self, rnd: int = 0) -> list[str]:
        """Every centre advertises a public key; every centre gets all of them. Centres that
        abstain take no part in this session's rounds. Returns the members' ids."""
        sid = self.session
        pubs = {}
        for p in self.proxies:
            out = p.call(
                "secagg_advertise",
                {"session": sid},
                rnd,
                "secagg_advertise",
                ADVERTISE,
                ADVERTISE_REQUEST,
            )
            if out is not None:
                pubs[str(p.cid)] = np.asarray(out["public_key"], dtype=np.uint8)
        ids = list(pubs)
        keys = np.stack([pubs[i] for i in ids]) if ids else np.zeros((0, 32), np.uint8)
        members = []
        for p in self.proxies:
            if str(p.cid) not in pubs:
                continue
            out = p.call(
                "secagg_peers",
                {"session": sid, "ids": ids, "public_keys": keys},
                rnd,
                "secagg_peers",
                PEERS,
                PEERS_REQUEST,
            )
            if out is not None:
                members.append(str(p.cid))
        if len(members) != len(ids):  # a centre without every peer's key cannot take part
            return self._setup_again(rnd, members)
        self.members = members
        return members

    def _setup_again(self, rnd: int, members: list[str]) -> list[str]:
        keep = [p for p in self.proxies if str(p.cid) in members]
        if not keep:
            self.members = []
            return []
        self.proxies, self.session = keep, f"secagg-{next(_SESSION_IDS)}"
        return self.setup(rnd)

    def instruction(self, rnd: int, cohort: Sequence[str]) -> dict[str, Any]:
        """What a round-``rnd`` request tells a centre of ``cohort`` (all members)."""
        return {
            "session": self.session,
            "round": int(rnd),
            "cohort": [str(c) for c in cohort],
            "frac_bits": int(self.frac_bits),
        }

    def unmask(
        self,
        rnd: int,
        cohort: Sequence[str],
        shares: Mapping[str, Message | None],
        protocol: Protocol,
    ) -> tuple[dict[str, Any], list[str]]:
        """The decoded sums of the round's shares (float64 values, 0-d for scalars) and the
        ids that contributed. ``shares``: cid -> its share, ``None`` if it sent none."""
        alive = [c for c in cohort if shares.get(c) is not None]
        dropped = [c for c in cohort if shares.get(c) is None]
        if not alive:
            raise SecAggAborted(f"no centre sent a share in round {rnd}", where=self.session)
        first = shares[alive[0]]
        keys = _numeric_keys(first, protocol)
        total = None
        for c in alive:
            s = shares[c]
            if list(s.get(SECAGG_FIELD, [])) != [f"{self.session}#{int(rnd)}"]:
                raise SecAggAborted(
                    f"centre {c!r} sent a share of another session or round",
                    where=f"{self.session} round {rnd}",
                )
            vec, layout = _uint_flatten(s, keys)
            if total is None:
                total, lay = vec.copy(), layout
            elif vec.shape != total.shape:
                raise SecAggAborted(
                    f"centre {c!r} sent a share of another shape",
                    where=f"{self.session} round {rnd}",
                )
            else:
                total += vec
        by_cid = {str(p.cid): p for p in self.proxies}
        for c in alive:
            out = by_cid[c].call(
                "secagg_unmask",
                {"session": self.session, "round": int(rnd), "dropped": dropped},
                rnd,
                "secagg_unmask",
                UNMASK,
                UNMASK_REQUEST,
            )
            self.unmask_messages += 1
            if out is None:
                raise SecAggAborted(
                    f"centre {c!r} sent its share but not its unmask keys in round {rnd}: the "
                    "sum cannot be unmasked",
                    where=f"{self.session} round {rnd}",
                    fix="run again; a centre must stay until the round is unmasked",
                )
            total -= prg(_key_bytes(out["self_key"]), total.size)
            pair_keys = np.asarray(out["pair_keys"], dtype=np.uint8).reshape(len(dropped), 32)
            for j, key in zip(dropped, pair_keys, strict=True):
                m = prg(key.tobytes(), total.size)
                if sign(c, j) > 0:
                    total -= m
                else:
                    total += m
        return unflatten(decode(total, self.frac_bits), lay), alive


def _uint_flatten(message: Mapping[str, Any], keys: Sequence[str]) -> tuple[np.ndarray, list]:
    parts, layout = [], []
    for k in keys:
        v = message[k]
        items = list(v) if isinstance(v, list | tuple) else [v]
        arrs = [np.asarray(a, dtype=np.uint64) for a in items]
        layout.append((k, [a.shape for a in arrs], isinstance(v, list | tuple)))
        parts.extend(a.ravel() for a in arrs)
    return (np.concatenate(parts) if parts else np.zeros(0, np.uint64)), layout
