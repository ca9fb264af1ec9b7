"""Rule `attacks_merge`: the attack parts → the tables `attacks_report` reads, in the rows and
order of the all-in-one jobs (issue 14)."""

from _common import run

from fedclust.attacks import workflow as wf
from fedclust.attacks.property_inference import property_inference_tests
from fedclust.io import read_table, write_table


def main() -> None:
    inp, out, att = snakemake.input, snakemake.output, snakemake.params.att
    cohorts = list(snakemake.params.cohorts)
    n_parts = len(wf.known_io_parts(att))
    kio = list(inp.known_io)
    for i, (cohort, path) in enumerate(zip(cohorts, out.known_io, strict=True)):
        tabs = [read_table(p) for p in kio[i * n_parts : (i + 1) * n_parts]]
        assert all((t["cohort"] == cohort).all() for t in tabs), cohort
        write_table(path, wf.merge_known_io(tabs, att["known_io"]), index=False)

    acc = wf.merge_pi([read_table(p) for p in inp.pi], att["property_inference"])
    write_table(out.pi_accuracy, acc, index=False)
    write_table(out.pi_tests, property_inference_tests(acc), index=False)

    errors, combined, tests = wf.merge_reconstruction(
        [read_table(p) for p in inp.rec_errors], [read_table(p) for p in inp.rec_combined]
    )
    write_table(out.rec_errors, errors, index=False)
    write_table(out.rec_combined, combined, index=False)
    write_table(out.rec_tests, tests, index=False)
    pinv = dict(zip(cohorts, (read_table(p) for p in inp.rec_pinv), strict=True))
    write_table(out.rec_pinv, wf.merge_pinv(pinv), index=False)


run(main, snakemake)
