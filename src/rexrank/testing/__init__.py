"""Offline stand-in models: random weights in the exact file layouts of the real metric models.

A stand-in proves the plumbing and lets parity tests compare rexrank with the reference packages on identical
weights. It says nothing about the real models' numbers.
"""
