"""A list of names given to a public function: a lone string is one name, never its characters.

One rule for every argument that takes names (muscles, coordinates, markers, force classes), kept
free of JAX so that the file readers and the command line can use it."""

from __future__ import annotations


def name_list(x, what: str, where: str) -> tuple[str, ...]:
    """``x`` as a tuple of str; a lone string is one name.  ``what`` is the argument (``"muscles"``),
    ``where`` the function; anything but a string or an iterable of strings raises ``TypeError``
    naming the argument and the offending item."""
    if isinstance(x, str):
        return (x,)
    try:
        items = tuple(x)
    except TypeError:
        raise TypeError(f"{where}: {what} must be a name or a list of names (str), got {type(x).__name__}: "
                        f"{x!r}") from None
    bad = [v for v in items if not isinstance(v, str)]
    if bad:
        raise TypeError(f"{where}: {what} must be names (str), got {type(bad[0]).__name__} {bad[0]!r} in {list(items)!r}")
    return items
