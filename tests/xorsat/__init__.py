"""Tests of gpuensembles.models.xorsat."""
