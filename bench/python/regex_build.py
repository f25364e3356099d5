# Regular expressions compiled from scratch (the cache purged each time) and matched: the
# re module's parser and compiler, which are written in Python.
import re

PATTERNS = [
    r"(?P<user>[\w.+-]+)@(?P<host>[\w-]+(?:\.[\w-]+)+)",
    r"^\s*(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\s*$",
    r"(?i)\b(?:error|warn(?:ing)?|fail(?:ed|ure)?)\b:?\s*(.*)",
    r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?",
    r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*",
    r"\"((?:[^\"\\\\]|\\\\.)*)\"",
]
LINES = [
    "contact: ada.lovelace+notes@example.co.uk",
    " 192.168.10.254 ",
    "WARNING: disk almost full",
    "2026-12-05T06:15:09 started",
    "Grace Brewster Murray Hopper",
    'say "hello \\"there\\""',
]


def work():
    found = 0
    for _ in range(120):
        re.purge()
        compiled = [re.compile(p) for p in PATTERNS]
        for line in LINES * 5:
            for c in compiled:
                if c.search(line):
                    found += 1
    return str(found)
