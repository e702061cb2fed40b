"""Offline tools: scoring files of runs, backfilling stored runs, judge agreement and the judge check.

They drive the same scorers and, for backfill, the same live pipeline as the service, but nothing here
runs on the ingest or live scoring path; ``spanscore.scoring`` is that path alone.
"""
