"""What a URL and a page are: canonical URLs and their wire lines, the HTML/CSS link parser, the scope
rules, and which rank owns a URL (assignments, part vectors)."""
