"""Wording shared by messages and reports."""


def counted(count: int, noun: str) -> str:
    """`1 row`, `2 rows`: a count and its noun (a regular plural)."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def printable(text: str) -> str:
    """`text` with its control and format characters (escape sequences, line breaks, bidi
    overrides) written as escapes. Messages quote folder and file names, status files and key
    values, which are anyone's text: shown (by the command, or in dbt's errors and warnings) they
    must neither drive the terminal nor forge a line. Printable text is returned as it is, so
    escaping twice changes nothing."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
