"""Tests of gpuensembles.core."""
