"""What the filesystem tools take: path arguments, the limits of the tree, the shell's."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from prove_gym.server import Entity

MAX_PATH = 4096
"""Longest path (PATH_MAX), in characters."""
MAX_NAME = 255
"""Longest file name or name pattern (NAME_MAX)."""

PathArg = Annotated[str, Entity("path"), Field(max_length=MAX_PATH)]
FileArg = Annotated[str, Entity("file"), Field(max_length=MAX_PATH)]
DirArg = Annotated[str, Entity("directory"), Field(max_length=MAX_PATH)]
NewPath = Annotated[str, Field(max_length=MAX_PATH)]
NamePattern = Annotated[str, Field(max_length=MAX_NAME)]
LineCount = Annotated[int, Field(ge=1, le=10000)]

MAX_FILE_BYTES = 1_000_000
MAX_NODES = 20_000
"""Most files and directories the tree may hold (more is "No space left on device")."""
MAX_TOTAL_BYTES = 32_000_000
"""Most bytes all files together may hold."""
MAX_RESULTS = 300
MAX_STACK = 20
NARROW = "give a deeper path (a subdirectory) or a max_depth"
PATH_PARAMS = ("path", "source", "destination", "path1", "path2")
