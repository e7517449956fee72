"""Wording shared by messages and reports."""


def counted(count: int, noun: str) -> str:
    """`1 row`, `2 rows`: a count and its noun (a regular plural)."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
