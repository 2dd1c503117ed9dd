"""Small PDFs for the tests, written here byte by byte: pypdf (our parser) rewrites PDFs but does
not lay out text, and a PDF generator such as reportlab would be a dependency for a few test pages.

`pdf_bytes(["first page", "", "third"])` is a three-page PDF with a text layer on pages 1 and 3
and none on page 2 (a line drawing, as a scanned page has an image and no text).
"""

from __future__ import annotations

import io


def _string(text: str) -> str:
    """A PDF literal string: backslashes and parentheses escaped."""
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def _content(text: str) -> str:
    """A page's drawing: each line of `text` in Helvetica, or a line drawing when there is no text."""
    if not text:
        return "72 72 m 540 720 l S"
    lines = " T* ".join(f"{_string(line)} Tj" for line in text.split("\n"))
    return f"BT /F1 11 Tf 14 TL 72 720 Td {lines} ET"


def pdf_bytes(pages: list[str], title: str | None = None) -> bytes:
    """A valid PDF 1.4 with one page per text ("" for a page without text) and, if given, a title in
    its document information."""
    first_page = 5  # 1 catalog, 2 page tree, 3 font, 4 information, then a page and its content each
    kids = " ".join(f"{first_page + 2 * i} 0 R" for i in range(len(pages)))
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        f"<< /Title {_string(title)} >>" if title else "<< >>",
    ]
    for i, text in enumerate(pages):
        content = _content(text)
        objects.append(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {first_page + 2 * i + 1} 0 R >>"
        )
        objects.append(f"<< /Length {len(content.encode('latin-1'))} >>\nstream\n{content}\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1"))
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    out.write("".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 4 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def encrypted(data: bytes, user_password: str, algorithm: str = "AES-256") -> bytes:
    """`data` encrypted by pypdf (algorithm "RC4-128", "AES-128" or "AES-256"); an empty user
    password opens it, as with PDFs that only restrict printing or copying."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password, "the owner's password", algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
