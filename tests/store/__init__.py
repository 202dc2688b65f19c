"""Tests of ferrymq.store: the shared conformance suite and backend-specific behaviour."""
