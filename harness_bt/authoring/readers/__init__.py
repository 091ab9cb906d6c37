"""One reader per document format, each making a :class:`~harness_bt.source.Document`
(plain data with the mark of every value) and the problems found reading it:

- :mod:`~harness_bt.authoring.readers.yaml`: YAML and JSON task and library files;
- :mod:`~harness_bt.authoring.readers.btcpp`: BehaviorTree.CPP v4 XML (its trees become subtrees);
- :mod:`~harness_bt.authoring.readers.python`: Python task files (a ``TaskSpec`` made with
  :mod:`harness_bt.authoring.builder`, or a ready :class:`~harness_bt.Task`).

:func:`read_document` picks the reader of a document file by its suffix.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness_bt.authoring.readers.btcpp import read_btcpp
from harness_bt.authoring.readers.yaml import read_yaml
from harness_bt.authoring.registries import Registries
from harness_bt.problems import Problem
from harness_bt.source import Document

__all__ = ["read_document"]


def read_document(path: str | os.PathLike[str], registries: Registries, *,
                  text: str | None = None) -> tuple[Document, list[Problem]]:
    """Read a task or library file: YAML (``.yaml``, ``.yml``, ``.json``) or BehaviorTree.CPP
    XML (``.xml``, read as a library of subtrees)."""
    if Path(path).suffix.lower() == ".xml":
        return read_btcpp(path, registries, text=text)
    return read_yaml(path, text=text)
