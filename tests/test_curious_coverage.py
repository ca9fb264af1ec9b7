# ruff: noqa: E501  (the COVERED map names tests by their full pytest ids)
"""Every declared Protocol has a test that plays the honest-but-curious server (developers'
guide), or an explicit exemption (a message that carries no patient information), or is listed
as a known gap. The names come from the library's registry (:func:`declared_protocols`: every
module imported, every protocol factory's example calls built), not from grepping the source;
a new protocol nobody mapped fails :func:`test_every_declared_protocol_is_mapped`."""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "fedclust"

# ----------------------------------------------------------------------- the map
S = "tests/test_curious_server.py::"
SUITE_HAC = "tests/test_attack_suite_hac.py::"
SUITE_SURV = "tests/test_attack_suite_survival.py::"
ADMM_DEC = "tests/test_attack_suite_admm_dec.py::"
PU = "tests/test_privacy_utility_attacks.py::"
PREP = "tests/test_data_fedpreprocess.py::test_floor_small_centre_abstains_and_server_learns_nothing_of_it"
BOOST = "tests/test_boosting.py::test_floor_keeps_a_curious_server_from_reading_one_patients_label"
CB = "tests/test_curious_boosting.py::"
CPU = "tests/test_curious_privacy_utility.py::"
CS = "tests/test_curious_scores.py::"
OPT_IN_HAC = SUITE_HAC + "test_per_sample_protocols_run_only_with_the_opt_in"
GRADUAL = SUITE_HAC + "test_gradual_differencing_across_runs_stopped_by_the_release_log"
RADIALGAN = "tests/test_generative_radialgan.py::test_without_the_centres_opt_in_no_code_leaves_and_each_scores_alone"
VIRTUAL = "tests/test_generative_savae.py::test_good_poor_protocol_floors_and_virtual_patients"

#: protocol → the test that attacks its recorded messages (defence off: a patient is recovered;
#: on: none). Relays (server → centre copies of another centre's message) map to the test of
#: the message they relay.
COVERED: dict[str, str] = {
    "admm_local_update": ADMM_DEC + "test_admm_one_row_centre_recovered_only_without_the_glm_floor",
    "admm_objective": CS + "test_admm_objective_losses_of_a_one_row_centre_give_the_row_only_without_the_floor",
    "admm_private_update": PU + "test_admm_attack_under_secure_aggregation_has_only_masked_shares",
    "admm_standardize": PU + "test_round_zero_moments_give_the_row_at_any_epsilon",
    "bayes_pvi_delta": S + "test_bayes_pvi_delta_of_a_one_patient_centre_solved_only_without_the_floor",
    "bayes_fedavg_fit": S + "test_bayes_fedavg_fit_above_the_floor_gives_no_single_image",
    "boosting_histogram": BOOST,
    "boosting_split_sums": BOOST,
    "boosting_local_trees": CB + "test_boosting_local_tree_leaf_of_one_patient_gives_its_label_only_without_the_floor",
    "boosting_moments": CB + "test_boosting_moments_of_a_two_patient_centre_solved_only_without_the_floor",
    # also test_boosting_sketch_places_a_lone_patient_in_a_cell_only_without_the_floor
    "boosting_sketch": CB + "test_boosting_sketch_run_ends_place_a_centres_extreme_patients_only_without_the_floor",
    # also test_boosting_vote_gain_of_a_one_patient_side_gives_its_label_only_without_the_floor
    "boosting_union": CB + "test_boosting_vote_adjacent_cuts_give_a_label_only_without_the_floor",
    "boosting_vote": CB + "test_boosting_vote_adjacent_cuts_give_a_label_only_without_the_floor",
    "boosting_totals": PU + "test_boosting_attack_recovers_bins_and_label_without_noise",
    "dec_ae_fit": CS + "test_dec_ae_fit_tied_tsae_of_a_one_patient_centre_inverted_only_without_the_floor",
    "dec_kmeans": ADMM_DEC + "test_dec_hostile_request_refused_by_the_centres_own_k_and_m",
    "d62_column_ones": S + "test_d62_column_ones_of_a_one_patient_centre_only_without_the_floor",
    "generative_moments": S + "test_generative_moments_of_a_one_patient_column_only_without_the_floor",
    "hac.genewise": SUITE_HAC + "test_genewise_two_sample_centre_recovered_only_below_the_floor",
    "hac.simultaneous": SUITE_HAC + "test_simultaneous_single_sample_centroids_only_below_the_floor",
    "hac.gradual.candidate": GRADUAL,
    "hac.gradual.centroid": GRADUAL,
    "hac.gradual.distances": GRADUAL,
    "hac.gradual.request": GRADUAL,  # the merge broadcasts the attack rebuilds the sets from
    "hac.gradual.samples": OPT_IN_HAC,
    "hac.projection": OPT_IN_HAC,
    "hac.perturbation": OPT_IN_HAC,
    "heart_impute_stats": S + "test_heart_impute_stats_of_a_one_patient_class_only_without_the_floor",
    "heart_impute_needs": S + "test_heart_impute_needs_of_a_rare_class_only_without_the_floor",
    "pu_cluster_release": CPU + "test_pu_cluster_release_of_one_patient_clusters_only_without_the_floor_and_noise",
    "pu_km_counts": CPU + "test_pu_km_counts_of_a_one_patient_centre_give_its_interval_and_status_only_without",
    "pu_lloyd_stats": CPU + "test_pu_lloyd_stats_cluster_of_one_patient_is_its_row_only_without_secure_aggregation",
    "pu_mean_stats": CPU + "test_pu_mean_stats_of_a_one_patient_centre_is_its_row_only_without_the_defence",
    "prep_column_moments": S + "test_fedprep_table_moments_and_bins_give_one_patient_only_without_the_floor",
    "prep_binned_counts": S + "test_fedprep_table_moments_and_bins_give_one_patient_only_without_the_floor",
    "prep_labels": "tests/test_data_fedpreprocess_tables.py::"
    "test_a_rare_class_is_not_in_the_label_set_so_differencing_runs_shows_nothing",
    "prep_logsum": PREP,
    "prep_normed_moments": PREP,
    "prep_nb_terms": PREP,
    "prep_vst_moments": PREP,
    "radialgan_codes": RADIALGAN,
    "radialgan_code_grads": RADIALGAN,
    "radialgan_codes_relay": RADIALGAN,
    "radialgan_grads_relay": RADIALGAN,
    "savae_virtual_patients": VIRTUAL,
    "savae_virtual_relay": VIRTUAL,
    "survival_coxph_sums": SUITE_SURV + "test_cox_pair_difference_recovers_a_patient_only_without_the_floor",
    "survival_cv_concordance": SUITE_SURV + "test_cv_sends_pair_counts_not_patient_rows",
    "survival_fit": CS + "test_survival_fit_first_layer_gives_no_row_of_a_centre_at_the_floor",
    "survival_local_model": CS + "test_survival_fit_first_layer_gives_no_row_of_a_centre_at_the_floor",
    "survival_km_counts": SUITE_SURV + "test_km_records_rebuilt_from_exact_counts_but_not_from_the_grid",
}  # fmt: skip

DOWN = "server → centre: a request or broadcast of what the server already holds"
ACK = "acknowledgement: the centre's sample count n only (≥ its floor, also in its updates)"
EMPTY = "empty acknowledgement"
KEYS = "secure-aggregation key agreement: public keys and mask seeds, no data"
#: protocol → why it carries no patient information
EXEMPT: dict[str, str] = {
    **dict.fromkeys([
        "admm_consensus", "admm_design", "admm_local_update_request", "admm_standardize_global",
        "admm_standardize_request", "boosting_grid", "boosting_grid_request", "boosting_model",
        "boosting_node_request", "check_summary_request", "d62_column_ones_request",
        "d62_flip_rates", "dec_global_centroids", "dec_kmeans_request",
        "fedcref_association_request", "fedcref_local_request", "fedcref_refine_request",
        "generative_global_model", "generative_moments_global", "generative_moments_request",
        "hac.genewise.request", "hac.simultaneous.request", "heart_eval_request",
        "heart_fl_global", "heart_impute_fill", "heart_impute_needs_request",
        "heart_impute_request", "prep_bins_request", "prep_columns_request",
        "prep_fill_broadcast", "prep_class_fill_broadcast", "prep_logmeans_broadcast", "prep_nb_request", "prep_request",
        "prep_selection_broadcast", "prep_trend_broadcast", "pu_cluster_request",
        "pu_km_request", "pu_lloyd_request", "pu_mean_request", "radialgan_codes_request",
        "savae_virtual_request", "survival_coxph_request", "survival_cv_request",
        "survival_evaluate_request", "survival_km_request", "secagg_advertise_request",
        "secagg_peers_request", "secagg_unmask_request",
    ], DOWN),
    **dict.fromkeys([
        "admm_consensus_ack", "admm_design_ack", "d62_received", "dgd_fit_received",
        "generative_standardised", "radialgan_applied", "savae_fit_received",
        "savae_virtual_received",
    ], ACK),
    **dict.fromkeys(["boosting_ack", "heart_impute_ack", "prep_ack"], EMPTY),
    **dict.fromkeys(["secagg_advertise", "secagg_peers", "secagg_unmask"], KEYS),
    "hac.gradual.setup": "the centre's sample count as metadata (the protocol's public setup)",
    "hac.gradual.finish": "the centre's count of negative centroid radicands (a diagnostic)",
    "hac.perturbation.request": DOWN,
    "hac.projection.request": DOWN,
    "check_summary": "deployment check (fedclust.deploycheck) on synthetic matrices, no patient",
}  # fmt: skip

#: protocols that carry data and have no curious-server test yet (the known gap: shrink it)
GAPS: dict[str, str] = {
    **dict.fromkeys([
        "d62_fit", "dec_fit", "dgd_fit", "fedcref_group_fit",
        "fedcref_local_models", "heart_fl_update", "heart_peer_weights", "heart_train",
        "savae_fit",
    ], "model weights after local training: no inversion attack yet (the first-layer ratio "
       "attack of bayes_fedavg_fit / survival_fit needs plain SGD and untied weights; those two "
       "and dgd_fit have the per-hidden-unit floor that stops it, fedclust.federation.unit_floor, "
       "the others not; "
       "DEC's tied TSAE is inverted for one SGD step of stage A (dec_ae_fit), not for stage C's "
       "KL step nor D6.2's unit-normed noisy TSAE; the Adam-trained models need an "
       "optimisation-based inversion: "
       "Adam's update of a one-patient rank-1 gradient is scale-free per entry. heart: the first "
       "BN layer's running mean/var after one full batch give mean and variance of each unit's "
       "ReLU activations; units with var/mean² = n − 1 are on for one patient (37 of 256, "
       "n = 3, synthetic), each one linear equation on that patient's row — fewer than its 20 "
       "features)"),
    **dict.fromkeys([
        "heart_eval_metrics", "radialgan_evaluation", "survival_evaluate",
        "fedcref_status", "fedcref_association_stats",
    ], "a centre's scalar scores/losses: no differencing attack yet (functions of covariates "
       "the server never sees; survival_evaluate of a two-patient centre under a linear Cox "
       "model gives only the difference of their covariates, and n_events ≥ the floor)"),
}  # fmt: skip

#: derived protocols are the base protocol's message transformed (masked shares, plus a metadata
#: instruction); they are covered by the base protocol's entry
DERIVED = re.compile(r"\+(secagg|instruction)$")


# ----------------------------------------------------------------------- helpers
def import_all() -> list[str]:
    """Import every module of the library (namespace packages included)."""
    names = []
    for p in sorted(SRC.rglob("*.py")):
        mod = ".".join(p.relative_to(SRC.parent).with_suffix("").parts)
        if mod.endswith(("__init__", "__main__")):
            continue
        importlib.import_module(mod)
        names.append(mod)
    return names


_LIST = """
import json, sys
sys.path.insert(0, sys.argv[1])
from test_curious_coverage import import_all
from fedclust.federation import declared_protocols
import_all()
print(json.dumps({n: dict(p.fields) for n, p in declared_protocols().items()}))
"""


@pytest.fixture(scope="module")
def declared() -> dict:
    """The library's protocols, listed in a fresh interpreter: in this one, other test files
    (same pytest worker) have registered protocols of their own."""
    out = subprocess.run([sys.executable, "-c", _LIST, str(Path(__file__).parent)], check=True,
                         capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    fields = json.loads(out.stdout.strip().splitlines()[-1])
    return {n: SimpleNamespace(fields=f) for n, f in fields.items() if not DERIVED.search(n)}


def test_names(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and n.name.startswith("test_")}  # fmt: skip


test_names.__test__ = False  # a helper, not a test


# ----------------------------------------------------------------------- the tests
def test_every_declared_protocol_is_mapped(declared):
    mapped = set(COVERED) | set(EXEMPT) | set(GAPS)
    missing = sorted(set(declared) - mapped)
    assert not missing, (
        f"protocols with no curious-server test: {missing}; write one and add it to COVERED "
        "(or EXEMPT with a reason if the message carries no patient information)"
    )
    assert not (set(COVERED) & set(EXEMPT)) and not (set(GAPS) & (set(COVERED) | set(EXEMPT)))


def test_every_mapped_name_is_declared(declared):
    stale = sorted((set(COVERED) | set(EXEMPT) | set(GAPS)) - set(declared))
    assert not stale, f"mapped names no module declares (renamed or removed?): {stale}"


def test_every_covering_test_exists():
    bad = []
    for name, ref in COVERED.items():
        path, _, fn = ref.partition("::")
        if not (ROOT / path).exists() or fn not in test_names(path):
            bad.append((name, ref))
    assert not bad, f"COVERED names tests that do not exist: {bad}"


def test_exemptions_carry_no_per_sample_field(declared):
    """An exemption is for messages without patient data: none may declare a per-sample field
    or a table of counts; an acknowledgement carries at most a count."""
    for name in EXEMPT:
        kinds = set(declared[name].fields.values())
        assert "per_sample" not in kinds and "table" not in kinds, name
        if EXEMPT[name] in (ACK, EMPTY):
            assert kinds <= {"count"}, name


def test_listing_the_declared_protocols_leaves_the_registry_as_it_was():
    from fedclust.federation import declared_protocols
    from fedclust.federation.ledger import REGISTRY

    before = dict(REGISTRY)
    declared_protocols()
    assert REGISTRY == before


def test_the_registry_sees_every_literal_protocol_name(declared):
    """A cross-check of the registry: every name written as ``Protocol("…")`` or
    ``fit_protocol("…")`` in the source is declared (a factory nobody decorated with
    :func:`fedclust.federation.declares` would be missed)."""
    pat = re.compile(r"\b(?:Protocol|fit_protocol|_up|received)\(\s*\"([^\"]+)\"")
    literal = {m for p in SRC.rglob("*.py") for m in pat.findall(p.read_text())}
    assert literal and not (literal - set(declared)), sorted(literal - set(declared))
