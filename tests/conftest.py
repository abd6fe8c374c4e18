"""Test-wide settings: Hypothesis runs derandomized, so CI is reproducible.

Explore new examples locally with ``pytest --hypothesis-profile=explore``.
"""

from hypothesis import settings

settings.register_profile("default", derandomize=True)
settings.register_profile("explore", derandomize=False, max_examples=2000)
settings.load_profile("default")
