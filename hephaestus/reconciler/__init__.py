"""Reconciler: git's connectors (desired) against live Connect clusters — plan, render, apply."""
