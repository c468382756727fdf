"""Scheduling and politeness on one rank: the frontier (URLStates, the Bucket, per-host records), the
URL-seen set, phase slots, politeness rules and groups, the stall watchdog, limits and how a crawl stops."""
