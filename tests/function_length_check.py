#!/usr/bin/env python3
"""No new function over 150 lines in the C++ sources (tuner/, include/, templates/, examples/, python/src/).

A function is found as a brace block whose opening line looks like a function head (a name and a parameter list
before the brace, not a class, struct, namespace, enum, lambda or control statement); its length is the count of
lines from the head to the closing brace. Functions longer than the limit that existed when the check was written
are listed in tests/data/long_functions.txt ("path:name lines"): they may shrink, not grow, and a listed function
that is gone or short again must leave the list, so the list only ever gets shorter.

Usage: tests/function_length_check.py [SOURCE_DIR] [--write-allowlist]
"""
import os
import re
import sys

LIMIT = 150
ROOTS = ["tuner", "include", "templates", "examples", os.path.join("python", "src")]
EXTENSIONS = (".cpp", ".h", ".cu", ".cuh")
NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "static_assert", "defined"}


# One pass over the text, left to right, so that whichever starts first wins: "//" inside a string literal is not a
# comment, and a quote inside a comment is not a string.
TOKENS = re.compile(
    r'R"(?P<delimiter>[^ ()\\\n]{0,16})\((?:.|\n)*?\)(?P=delimiter)"'  # raw string
    r'|"(?:\\.|[^"\\\n])*"'                                           # string
    r"|'(?:\\.|[^'\\\n])*'"                                           # character
    r"|//[^\n]*"                                                       # line comment
    r"|/\*(?:.|\n)*?\*/"                                                # block comment
)


def strip(text):
    """The text with comments and string and character literals blanked, line structure kept."""
    def blank(match):
        token = match.group(0)
        if token.startswith("//"):
            return ""
        if token.startswith("/*"):
            return re.sub(r"[^\n]", " ", token)
        if token.startswith("'"):
            return "' '"
        return '""' + "\n" * token.count("\n")  # raw strings may span lines
    return TOKENS.sub(blank, text)


def functions(path):
    """(name, first line, length) of every function body outside another function's."""
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    text = re.sub(r"^\s*#.*$", "", text, flags=re.M)  # preprocessor lines
    found = []
    stack = []  # (is_function, name, start line) per open brace
    head_start = 0  # where the text leading to the next brace begins: after the last ';', '{' or '}'
    line = 1
    for position, character in enumerate(text):
        if character == "\n":
            line += 1
        elif character in ";":
            head_start = position + 1
        elif character == "{":
            head = " ".join(text[head_start:position].split())
            start = line - text[head_start:position].lstrip().count("\n") if head else line
            first_paren = head.find("(")
            name_match = re.search(r"([A-Za-z_~][\w:~]*)\s*(?:<[^()]*>)?\s*$", head[:first_paren]) if first_paren > 0 else None
            name = name_match.group(1) if name_match else ""
            inside_function = any(is_function for is_function, _, _ in stack)
            is_function = (bool(name) and not inside_function and name.split("::")[-1] not in NOT_FUNCTIONS
                           and not re.match(r"^(class|struct|namespace|enum|union|extern)\b", head)
                           and "=" not in head[:first_paren])
            stack.append((is_function, name, start))
            head_start = position + 1
        elif character == "}":
            if stack:
                is_function, name, start = stack.pop()
                if is_function:
                    found.append((name, start, line - start + 1))
            head_start = position + 1
    return found


def main(arguments):
    write = "--write-allowlist" in arguments
    arguments = [a for a in arguments if a != "--write-allowlist"]
    source_dir = os.path.abspath(arguments[0] if arguments else os.path.join(os.path.dirname(__file__), ".."))
    allowlist_path = os.path.join(source_dir, "tests", "data", "long_functions.txt")
    long_ones = {}
    for root in ROOTS:
        for directory, _, files in os.walk(os.path.join(source_dir, root)):
            for file in sorted(files):
                if not file.endswith(EXTENSIONS):
                    continue
                path = os.path.join(directory, file)
                relative = os.path.relpath(path, source_dir)
                for name, start, length in functions(path):
                    if length > LIMIT:
                        long_ones[f"{relative}:{name}"] = max(length, long_ones.get(f"{relative}:{name}", 0))
    if write:
        with open(allowlist_path, "w") as out:
            for key in sorted(long_ones):
                out.write(f"{key} {long_ones[key]}\n")
        print(f"wrote {len(long_ones)} functions to {os.path.relpath(allowlist_path, source_dir)}")
        return 0
    allowed = {}
    if os.path.exists(allowlist_path):
        for line in open(allowlist_path):
            if line.strip():
                key, _, length = line.rstrip().rpartition(" ")
                allowed[key] = int(length)
    problems = []
    for key, length in sorted(long_ones.items()):
        if key not in allowed:
            problems.append(f"{key}: {length} lines, over {LIMIT}: split it into named steps")
        elif length > allowed[key]:
            problems.append(f"{key}: grew from {allowed[key]} to {length} lines (over {LIMIT}): split it, do not grow it")
    for key, length in sorted(allowed.items()):
        if key not in long_ones:
            problems.append(f"{key}: no longer over {LIMIT} lines (or gone): remove it from tests/data/long_functions.txt")
        elif long_ones[key] < length:
            problems.append(f"{key}: shrank from {length} to {long_ones[key]} lines: lower its entry in tests/data/long_functions.txt")
    for problem in problems:
        print(problem)
    print(f"{len(long_ones)} functions over {LIMIT} lines, {len(allowed)} allowed; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
