"""Tests of gpuensembles.models.mcls."""
