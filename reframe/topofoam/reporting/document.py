"""The report as data (sections of text, tables and figures), written as Markdown and as
one self-contained HTML page (figures embedded)."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    caption: str = ""


@dataclass
class Figure:
    path: Path  # a PNG under the report's figures/ folder
    caption: str


@dataclass
class Section:
    title: str
    blocks: list = field(default_factory=list)  # str (a paragraph), Table, Figure

    def add(self, *blocks):
        self.blocks.extend(b for b in blocks if b)
        return self


@dataclass
class Document:
    title: str
    sections: list[Section] = field(default_factory=list)

    def section(self, title: str) -> Section:
        self.sections.append(Section(title))
        return self.sections[-1]


def _md_cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(doc: Document, base: Path) -> str:
    out = [f"# {doc.title}", ""]
    for sec in doc.sections:
        out += [f"## {sec.title}", ""]
        for block in sec.blocks:
            if isinstance(block, Table):
                if block.caption:
                    out += [f"*{block.caption}*", ""]
                out.append("| " + " | ".join(map(_md_cell, block.header)) + " |")
                out.append("|" + "---|" * len(block.header))
                out += ["| " + " | ".join(map(_md_cell, row)) + " |" for row in block.rows]
                out.append("")
            elif isinstance(block, Figure):
                out += [f"![{block.caption}]({block.path.relative_to(base).as_posix()})", ""]
            else:
                out += [str(block), ""]
    return "\n".join(out)


_STYLE = """body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #bbb;padding:.2em .5em;
text-align:right}th{background:#eee}td:first-child,th:first-child{text-align:left}
caption{caption-side:top;text-align:left;font-style:italic;padding:.3em 0}
figure{margin:1em 0}figcaption{font-style:italic}img{max-width:100%}"""


def page(doc: Document) -> str:
    e = html.escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(doc.title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{e(doc.title)}</h1>",
    ]
    for sec in doc.sections:
        out.append(f"<h2>{e(sec.title)}</h2>")
        for block in sec.blocks:
            if isinstance(block, Table):
                out.append("<table>")
                if block.caption:
                    out.append(f"<caption>{e(block.caption)}</caption>")
                out.append(
                    "<tr>" + "".join(f"<th>{e(str(h))}</th>" for h in block.header) + "</tr>"
                )
                out += [
                    "<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>"
                    for row in block.rows
                ]
                out.append("</table>")
            elif isinstance(block, Figure):
                data = base64.b64encode(block.path.read_bytes()).decode()
                out.append(
                    f'<figure><img alt="{e(block.caption)}" '
                    f'src="data:image/png;base64,{data}">'
                    f"<figcaption>{e(block.caption)}</figcaption></figure>"
                )
            else:
                out.append(f"<p>{e(str(block))}</p>")
    out.append("</body></html>")
    return "\n".join(out)
