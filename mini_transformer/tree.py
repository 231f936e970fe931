"""The one walker over a params container: map, leaves, named leaves, rebuild.

A params container is a frozen dataclass whose fields are arrays, other containers,
tuples of containers (the layers of a stack), None (an absent final norm) or plain
settings (``eps``, ``norm_first``). Every array has a name, its path of field names
and layer indices, e.g. ``"encoder_layers.0.attn.W_Q"``: the name it has in a
checkpoint and in a ``mini_transformer.torch`` module's ``state_dict``.
"""

from __future__ import annotations

import dataclasses
import typing


def tree_map(f, tree, *others):
    """``f`` applied to every array of a params container (and the matching arrays of
    ``others``, containers of the same layout), giving a container of that layout.

    Nested containers and tuples of containers (the layers of a stack) are walked;
    fields that are not arrays (``eps``) are kept from ``tree``; None stays None.
    """
    if tree is None:
        return None
    if isinstance(tree, tuple):
        return tuple(tree_map(f, *items) for items in zip(tree, *others, strict=True))
    if dataclasses.is_dataclass(tree):
        changes = {}
        for field in dataclasses.fields(tree):
            values = [getattr(t, field.name) for t in (tree, *others)]
            if values[0] is None or dataclasses.is_dataclass(values[0]) \
                    or isinstance(values[0], tuple) or hasattr(values[0], "shape"):
                changes[field.name] = tree_map(f, *values)
        return dataclasses.replace(tree, **changes)
    if hasattr(tree, "shape"):
        return f(tree, *others)
    raise ValueError(
        f"tree_map walks params containers and arrays, got {type(tree).__name__}"
    )


def tree_leaves(tree) -> list:
    """Every array of a params container, in field order."""
    return list(named_leaves(tree).values())


def named_leaves(tree) -> dict:
    """{"encoder_layers.0.attn.W_Q": array, ...}: every array under its path, in
    field order (the order of ``tree_leaves``)."""
    return {k: v for k, v in _named(tree, "") if hasattr(v, "shape")}


def named_settings(tree) -> dict:
    """{"eps": 1e-05, "encoder_layers.0.eps": 1e-05, "norm_first": False, ...}: every
    field that is neither an array, a container nor None, under its path."""
    return {k: v for k, v in _named(tree, "") if not hasattr(v, "shape")}


def _named(obj, prefix):
    """(path, value) of every array and setting below obj, in field order."""
    if dataclasses.is_dataclass(obj):
        for field in dataclasses.fields(obj):
            yield from _named(getattr(obj, field.name), f"{prefix}{field.name}.")
    elif isinstance(obj, tuple):
        for i, item in enumerate(obj):
            yield from _named(item, f"{prefix}{i}.")
    elif obj is not None:
        yield prefix[:-1], obj


def from_named(cls, values: dict):
    """A container of class ``cls`` built from ``values``, {path: array or setting}:
    the inverse of ``named_leaves`` and ``named_settings``. The layout comes from the
    fields' annotations: a field annotated with a container class is built from the
    paths under it, ``tuple[C, ...]`` from ``<field>.0``, ``<field>.1``, ... as far
    as they go, ``C | None`` as C, or None when no path lies under it (an absent
    final norm or cross-attention); a field absent from ``values`` takes its
    default. Fields with no default and no value raise one ValueError that lists
    them all: ``missing ['encoder_layers.0.attn.b_V', ...]``."""
    missing = []
    tree = _build(cls, values, "", missing)
    if missing:
        more = " ..." if len(missing) > 4 else ""
        raise ValueError(f"missing {missing[:4]}{more}")
    return tree


def _build(cls, values, prefix, missing):
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for field in dataclasses.fields(cls):
        path, hint = f"{prefix}{field.name}", hints[field.name]
        item = typing.get_args(hint)[0] if typing.get_origin(hint) is tuple else None
        optional = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(optional) == 1 and type(None) in typing.get_args(hint):
            # ``C | None``: None when no path lies under it
            if not any(k.startswith(f"{path}.") for k in values):
                kwargs[field.name] = None
                continue
            hint = optional[0]
        if dataclasses.is_dataclass(hint):
            kwargs[field.name] = _build(hint, values, f"{path}.", missing)
        elif item is not None:
            n = 0
            while any(k.startswith(f"{path}.{n}.") for k in values):
                n += 1
            kwargs[field.name] = tuple(_build(item, values, f"{path}.{i}.", missing)
                                       for i in range(n))
        elif path in values:
            kwargs[field.name] = values[path]
        elif field.default is dataclasses.MISSING:
            missing.append(path)
            kwargs[field.name] = None
    return cls(**kwargs)
