"""What an honest-but-curious server can learn from the messages it receives (issue 22).

* :mod:`.recorder` — :class:`RecordingLedger`: a ledger that keeps every delivered copy, i.e.
  exactly what a server that stores its traffic holds;
* :mod:`.attacks` — the attacks such a server runs on the recorded messages (rebuild records
  from counts, difference releases across runs, solve the linear systems of iterates, send
  hostile requests), each returning the individual records it recovered;
* :mod:`.release_log` — a centre's log of the sample sets whose sums it has released, refusing a
  release that would let a linear combination of releases isolate one sample;
* :mod:`.suite` — every protocol run on small synthetic centres under the centres' own
  disclosure policy, attacked, and tabulated for the report's Privacy section (:mod:`.report`).
"""
