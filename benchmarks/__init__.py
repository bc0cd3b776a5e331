"""streamfsm's benchmark harness (issue 3): ``python -m benchmarks`` (``--smoke`` for the quick CI run).

Every figure is a ratio to a bare dict loop timed in the same process, in interleaved rounds; every
contender's output is checked against the content the workload was built from. See ``run.py``.
"""
