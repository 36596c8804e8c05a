"""The defaults of every resampling statistic: a run's bootstrap CIs, compare's paired tests and rank CIs, subgroup
and meta-evaluation CIs, and the limit on what a run may ask for.

Declared once here and read by the statistics (``bootstrap``, ``statistics``), their callers and the command line.
This module imports nothing, so `rexrank --help` shows the defaults without loading numpy.
"""

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
DEFAULT_CONFIDENCE = 0.95
# Approximate-randomization swaps of compare's paired test.
DEFAULT_PERMUTATIONS = 10_000
# The most resamples (and permutations) a run may ask for: 100,000 already pins a 95% percentile interval and a
# p-value to ~1e-5, and costs seconds on 10,000 studies; far more only burns minutes (rexrank.evaluation.harness).
MAX_RESAMPLES = 100_000
