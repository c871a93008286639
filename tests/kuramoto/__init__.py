"""Tests of gpuensembles.models.kuramoto."""
