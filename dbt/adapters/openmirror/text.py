"""Wording shared by messages and reports."""


def counted(count: int, noun: str) -> str:
    """`1 row`, `2 rows`: a count and its noun (a regular plural)."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def printable(text: str) -> str:
    """`text` with its control and format characters (escape sequences, line breaks, bidi
    overrides) written as escapes: what a command prints from a landing zone or the service's
    status files is anyone's text, and must neither drive the terminal nor forge a line."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
