"""Fixtures of the inference tests: the same digits slice and one-thread setting as tests/zoo."""

from tests.zoo.conftest import _one_torch_thread, digits_small  # noqa: F401 (fixtures)
