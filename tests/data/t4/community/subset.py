#!/usr/bin/env python3
"""Writes the convolution T4 subsets of this folder from the community data sets (Kernel Tuner's benchmark hub).

Every configuration that failed on the A4000, every tenth of the others and each GPU's fastest one, with the same
configurations from the A6000; the entries themselves are copied unchanged. Run from this folder with the folder
holding the full files as the argument: python3 subset.py ../../../../../shared/datasets/t4
"""
import gzip
import json
import sys
from pathlib import Path


def key(result):
    return json.dumps(result["configuration"], sort_keys=True)


def fastest(document):
    correct = [r for r in document["results"] if r["invalidity"] == "correct"]
    return key(min(correct, key=lambda r: r["measurements"][0]["value"]))


def main(source):
    names = ["convolution-A4000.T4.json.gz", "convolution-A6000.T4.json.gz"]
    documents = [json.load(gzip.open(Path(source) / name)) for name in names]
    a4000 = documents[0]["results"]
    kept = {key(r) for i, r in enumerate(a4000) if r["invalidity"] != "correct" or i % 10 == 0}
    kept |= {fastest(document) for document in documents}
    for name, document in zip(names, documents):
        document["results"] = [r for r in document["results"] if key(r) in kept]
        with gzip.GzipFile(name, "wb", mtime=0) as output:
            output.write(json.dumps(document).encode())


if __name__ == "__main__":
    main(sys.argv[1])
