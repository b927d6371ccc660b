#!/usr/bin/env python3
"""Every relative link of the README and docs/*.md names a file or folder that exists, and every #anchor of a
markdown link names a heading of its target page (GitHub's heading ids: lower case, punctuation dropped, spaces as
hyphens).

Usage: tests/docs_links_check.py [SOURCE_DIR]   (exit 0: every link resolves; 1: the broken ones listed)
"""
import glob
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"```.*?```", re.S)


def anchors(path):
    ids = set()
    with open(path, encoding="utf-8") as file:
        text = CODE.sub("", file.read())
    for line in text.splitlines():
        match = re.match(r"^#{1,6}\s+(.*)$", line)
        if match:
            heading = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower())
            ids.add(heading.replace(" ", "-"))
    return ids


def main(arguments):
    source_dir = os.path.abspath(arguments[0] if arguments else os.path.join(os.path.dirname(__file__), ".."))
    documents = [os.path.join(source_dir, "README.md")] + sorted(glob.glob(os.path.join(source_dir, "docs", "*.md")))
    broken, checked = [], 0
    for document in documents:
        with open(document, encoding="utf-8") as file:
            text = CODE.sub("", file.read())
        for target in LINK.findall(text):
            if re.match(r"^(https?:|mailto:)", target):
                continue
            checked += 1
            path_part, _, anchor = target.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(document), path_part)) if path_part else document
            name = os.path.relpath(document, source_dir)
            if not os.path.exists(path):
                broken.append(f"{name}: {target}: no such file")
            elif anchor and path.endswith(".md") and anchor not in anchors(path):
                broken.append(f"{name}: {target}: no heading #{anchor} in {os.path.relpath(path, source_dir)}")
    for line in broken:
        print(line)
    print(f"{checked} links checked in {len(documents)} pages; {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
