"""Storage: WARC and CDXJ files, the session's files, checkpoints and the journal, validators, crash
records, plain-data encoding, the crawl log and the ranks' log files."""
