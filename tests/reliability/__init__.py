"""Reliability and security suite: the trust boundary under hostile input, load and faults (issue 8)."""
