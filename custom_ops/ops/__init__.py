"""Dialect op units, one module per op under a family package."""
