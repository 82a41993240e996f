"""Prometheus metrics, read from the job store and Redis at scrape time."""
