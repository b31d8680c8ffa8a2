"""Snowflake pieces that need no server: the UDF handlers, the staged code zip and the PUT
statements, connection settings from the environment, `type: snowflake` sources."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import duckdb
import pytest

import python_udfs.snowflake_udfs as sf_udfs
import python_udfs.udfs as text_udfs
from dbrouter.kb.snowflake import (
    build_code_zip,
    connect_kwargs_from_env,
    raw_insert_statements,
    raw_table_ddl,
    stage_commands,
)
from dbrouter.sources.snowflake import SnowflakeConfigError
from python_udfs.embeddings import get_embedder
from python_udfs.plugin import register_udfs

ROOT = Path(__file__).resolve().parents[2]


def test_macro_udf_table_matches_the_handler_module():
    macro = (ROOT / "macros" / "snowflake" / "snowflake_udf_statements.sql").read_text()
    rows = re.findall(r"\('(dbrouter_\w+)', '([^']*)', '(\w+)', '(\w+)'\)", macro)
    assert {name: (args, returns, handler) for name, args, returns, handler in rows} == sf_udfs.UDFS
    assert [u.name for u in text_udfs.TEXT_UDFS] == [name for name, *_ in rows]
    for _args, _returns, handler in sf_udfs.UDFS.values():
        assert callable(getattr(text_udfs, handler))
    for embedder in ("minilm", "m2v", "hash"):  # the handlers the python_udf embedder names
        for udf in sf_udfs.EMBEDDING_UDFS:
            assert callable(getattr(sf_udfs, f"{udf}_{embedder}"))


@pytest.mark.parametrize("sql, call", [
    ("select dbrouter_question_spans('How many singers are older than 30?', 3)",
     lambda: text_udfs.question_spans("How many singers are older than 30?", 3)),
    ("select dbrouter_content_words('Which orchestra has the most performances?')",
     lambda: text_udfs.content_words("Which orchestra has the most performances?")),
    ("select dbrouter_label_tokens(['singerName', null, 'concert_singer'])",
     lambda: text_udfs.label_tokens(["singerName", None, "concert_singer"])),
    ("select dbrouter_substrings('revenue in 2020 of 5 stores', 1, 2)",
     lambda: text_udfs.substrings("revenue in 2020 of 5 stores", 1, 2)),
    ("select dbrouter_word_count('a b c')", lambda: text_udfs.word_count("a b c")),
    ("select dbrouter_canonicalize('sold 12 on 3 March 2020')", lambda: text_udfs.canonicalize("sold 12 on 3 March 2020")),
    ("select dbrouter_normalize_question('How many singers do we have?')",
     lambda: text_udfs.normalize_question("How many singers do we have?")),
    ("select dbrouter_describe_example('How many singers?', 'select count(*) from singer', '[[\"singer\",\"name\",\"name\"]]')",
     lambda: text_udfs.describe_example("How many singers?", "select count(*) from singer", '[["singer","name","name"]]')),
    ("select dbrouter_structure_statement('rich refers to income > 100', '[[\"people\",\"income\",\"income\"]]')",
     lambda: text_udfs.structure_statement("rich refers to income > 100", '[["people","income","income"]]')),
])
def test_duckdb_udfs_return_what_their_handlers_return(sql, call):
    """One handler per UDF for both engines: DuckDB's registration converts types and NULLs only."""
    with duckdb.connect() as con:
        register_udfs(con, "hash")
        expected = con.execute(sql).fetchall()[0][0]
    assert call() == expected
    assert expected not in (None, [], "")


def test_embed_handlers_give_the_embedder_vectors_and_null_for_blank():
    vec = sf_udfs.embed_hash("How many singers?")
    assert len(vec) == 384 and vec == [float(x) for x in get_embedder("hash").encode(["How many singers?"])[0]]
    assert sf_udfs.embed_phrase_hash("singer name") == sf_udfs.embed_hash("singer name")  # hash is its own phrase model
    assert sf_udfs.embed_hash("   ") is None and sf_udfs.embed_hash(None) is None


def test_code_zip_holds_the_handlers_and_imports_without_duckdb(tmp_path):
    path = build_code_zip(tmp_path)
    names = set(zipfile.ZipFile(path).namelist())
    assert {"python_udfs/snowflake_udfs.py", "python_udfs/phrases.py", "python_udfs/errors.py"} <= names
    assert "python_udfs/plugin.py" not in names and not any(n.startswith("dbrouter/") for n in names)
    probe = ("import sys, importlib.abc\n"
             "class Block(importlib.abc.MetaPathFinder):\n"
             "    def find_spec(self, name, path, target=None):\n"
             "        if name.split('.')[0] in ('duckdb', 'dbt', 'dbrouter'): raise ImportError('blocked ' + name)\n"
             "sys.meta_path.insert(0, Block())\n"
             f"sys.path.insert(0, {str(path)!r})\n"
             "import python_udfs.snowflake_udfs as m, python_udfs.udfs as u\n"
             "assert m.__file__.startswith(sys.path[0]), m.__file__\n"
             "print(u.label_tokens(['FirstName']), len(m.embed_hash('x')))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["['first',", "'name']", "384"]


def test_unpack_import_puts_a_staged_package_on_the_path(tmp_path, monkeypatch):
    imports = tmp_path / "imports"
    imports.mkdir()
    with zipfile.ZipFile(imports / "pkg_model.zip", "w") as zf:
        zf.writestr("pkg_model/__init__.py", "from pathlib import Path\nDIR = Path(__file__).parent\n")
        zf.writestr("pkg_model/model/weights.bin", b"\x00\x01")
    monkeypatch.setattr(sys, "path", list(sys.path))
    dest = sf_udfs.unpack_import("pkg_model.zip", imports, tmp_path / "unpacked")
    assert sys.path[0] == str(dest)
    import pkg_model  # noqa: F401 - importable from the unpacked directory, with real files

    assert (Path(pkg_model.DIR) / "model" / "weights.bin").read_bytes() == b"\x00\x01"
    with pytest.raises(FileNotFoundError, match="stage it"):
        sf_udfs.unpack_import("missing.zip", imports, tmp_path / "unpacked")


def test_stage_commands_create_the_stage_and_put_each_file():
    cmds = stage_commands("kb.dbrouter_stage", [Path("/tmp/a b/dbrouter_udfs.zip"), Path("/tmp/o'k.zip")])
    assert cmds == ["create stage if not exists kb.dbrouter_stage",
                    "put 'file:///tmp/a b/dbrouter_udfs.zip' @kb.dbrouter_stage auto_compress = false overwrite = true",
                    "put 'file:///tmp/o\\'k.zip' @kb.dbrouter_stage auto_compress = false overwrite = true"]


def test_stage_print_lists_the_statements_without_connecting(tmp_path):
    out = subprocess.run([sys.executable, "-m", "dbrouter.kb.snowflake", "stage", "--embedder", "hash", "--print"],
                         capture_output=True, text=True, env={"PATH": "/usr/bin", "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "create stage if not exists dbrouter_stage;"
    assert len(lines) == 2 and lines[1].startswith("put 'file://") and "/dbrouter_udfs.zip' @dbrouter_stage" in lines[1]


def test_connection_from_env_password_or_key_pair_and_missing_names_the_variable():
    base = {"SNOWFLAKE_ACCOUNT": "acme-x1", "SNOWFLAKE_USER": "router"}
    kw = connect_kwargs_from_env({**base, "SNOWFLAKE_PASSWORD": "pw", "SNOWFLAKE_ROLE": "READER"})
    assert kw == {"account": "acme-x1", "user": "router", "database": "DBROUTER", "schema": "KB", "password": "pw",
                  "role": "READER"}
    kw = connect_kwargs_from_env({**base, "SNOWFLAKE_PRIVATE_KEY_PATH": "/keys/k.p8",
                                  "SNOWFLAKE_PRIVATE_KEY_PASSPHRASE": "pp"})
    assert kw["private_key_file"] == "/keys/k.p8" and kw["private_key_file_pwd"] == "pp" and "password" not in kw
    with pytest.raises(SnowflakeConfigError, match="SNOWFLAKE_PASSWORD or SNOWFLAKE_PRIVATE_KEY_PATH"):
        connect_kwargs_from_env(base)


def test_raw_snapshot_statements_type_arrays_and_escape_text():
    ddl = raw_table_ddl("dbrouter_raw")
    assert "sample_values array" in ddl["columns"] and "is_primary_key boolean" in ddl["columns"]
    rows = {"columns": [dict(db_id="d", table_name="t", column_name="c", column_label="it's", ordinal=1,
                             data_type="text", is_primary_key=False, description="back\\slash",
                             value_description=None, sample_values=["a'b", "c"])]}
    [sql] = raw_insert_statements("dbrouter_raw", rows)
    assert sql.startswith("insert into dbrouter_raw.columns (db_id, table_name, column_name")
    assert "'it''s'" in sql and "'back\\\\slash'" in sql and "array_construct('a''b', 'c')" in sql
    assert ", false, " in sql and ", null, " in sql
