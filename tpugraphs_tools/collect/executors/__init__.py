"""Executors that run collections elsewhere than this process (Ray)."""
