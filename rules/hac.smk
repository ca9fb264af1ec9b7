# Stage: hac. (Filled in by its issue; appends to TARGETS and REPORT_SECTIONS.)
