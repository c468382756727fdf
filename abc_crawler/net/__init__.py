"""Networking: fetching with libcurl (TLS, proxies, the address rule), robots.txt and sitemaps."""
