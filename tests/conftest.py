"""Shared settings and fixtures for the unit tests (helpers live in helpers.py).

The oracles are independent of the code under test: torch's own modules
(``torch.nn.MultiheadAttention``, ``torch.nn.TransformerEncoderLayer``,
``torch.nn.LayerNorm``, ``F.scaled_dot_product_attention``), values derived by
hand in comments, and mathematical identities. Weights reach the torch modules
through the package's interop (``to_torch`` / ``from_torch``), which
``test_params_interop.py`` checks on its own.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

# Fast, reproducible property tests: the whole suite (unit tests and the
# notebooks) has to stay under a minute on two cores.
settings.register_profile(
    "mini_transformer",
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("mini_transformer")
# Hypothesis keeps a cache of constants even without a database: not in the checkout.
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "mini_transformer-hypothesis")

# Two pytest-xdist workers share two cores: one torch thread each.
torch.set_num_threads(1)


@pytest.fixture
def rng():
    return np.random.default_rng(20240607)
