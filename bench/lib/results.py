"""Reading bench/results/<scenario>-<time>.txt files: their header and their markdown tables."""
import os
import re


def tables(path):
    """{figure name: value} for every cell of every markdown table in the file, in file order.

    A figure is named "<section> · <row> · <column>", the section being the text of the last
    "## …" or "### …" heading up to its first colon (e.g. "between · victoriametrics · p50 ms").
    """
    figures = {}
    section = ""
    header = None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("#") and not line.startswith("# "):  # "## …" / "### …", not the "# …" header lines
            section = line.lstrip("#").strip().split(":")[0]
            header = None
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not all(set(c) <= set("-: ") for c in cells):
                for column, value in zip(header[1:], cells[1:]):
                    figures[f"{section} · {cells[0]} · {column}"] = value
        else:
            header = None
    return figures


def commit(path):
    """The readingsd commit the file measured (its "# readingsd: " header line), or "?"."""
    for line in open(path, encoding="utf-8"):
        if line.startswith("# readingsd: "):
            return line[len("# readingsd: "):].split()[0]
    return "?"


def settings(path):
    """The NAME=value settings of the file's "# reproduce: " header line."""
    for line in open(path, encoding="utf-8"):
        if line.startswith("# reproduce: "):
            return dict(re.findall(r"(\w+)=('[^']*'|\S+)", line))
    return {}


def label(path):
    stamp = re.search(r"T(\d{6})Z", os.path.basename(path))
    return f"{stamp.group(1) if stamp else os.path.basename(path)} {commit(path)}"


def number(value):
    try:
        return float(value.strip("*").replace(",", ""))
    except ValueError:
        return None
