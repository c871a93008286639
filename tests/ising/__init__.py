"""Tests of gpuensembles.models.ising."""
