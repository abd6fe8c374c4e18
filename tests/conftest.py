"""Test-wide settings: Hypothesis runs derandomized, so CI is reproducible, and without its per-example deadline
(200 ms by default): no test fails for being slow on a loaded machine (the benchmarks in bench/ time things).

Explore new examples locally with ``pytest --hypothesis-profile=explore``.
"""

from hypothesis import settings

settings.register_profile("default", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, max_examples=2000, deadline=None)
settings.load_profile("default")
