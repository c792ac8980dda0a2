"""Measured ranking quality: judged collections in, TREC runs and standard metrics out."""
