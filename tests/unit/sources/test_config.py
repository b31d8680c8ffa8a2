import pytest

from dbrouter.errors import SourcesConfigError
from dbrouter.sources.config import load_sources


def test_load_sources_expands_globs_and_resolves_paths(tmp_path):
    (tmp_path / "dbs").mkdir()
    for name in ("a", "b"):
        (tmp_path / "dbs" / f"{name}.sqlite").write_bytes(b"")
    (tmp_path / "s.yml").write_text(
        "sample_values: 3\ndatabases:\n  - {type: sqlite, glob: 'dbs/*.sqlite'}\n"
        "  - {type: schema_json, path: x.jsonl, id: x}\nexamples: [{path: ex.jsonl}]\n")
    cfg = load_sources(tmp_path / "s.yml")
    assert [s.path.name for s in cfg.databases] == ["a.sqlite", "b.sqlite", "x.jsonl"]
    assert cfg.databases[2].id == "x"
    assert cfg.sample_values == 3
    assert cfg.examples == [tmp_path / "ex.jsonl"]


@pytest.mark.parametrize("body, message", [
    ("databases: [{type: oracle, path: x}]", "type must be one of"),
    ("databases: [{type: sqlite, path: x, glob: y}]", "exactly one of"),
    ("databases: [{type: sqlite, glob: 'nothing/*.db'}]", "matched no file"),
    ("dbs: []", "`databases:` list"),
    ("databases: [oops", "not valid YAML"),
])
def test_malformed_sources_name_the_problem(tmp_path, body, message):
    (tmp_path / "s.yml").write_text(body)
    with pytest.raises(SourcesConfigError, match=message):
        load_sources(tmp_path / "s.yml")


def test_missing_sources_file(tmp_path):
    with pytest.raises(SourcesConfigError, match="not found"):
        load_sources(tmp_path / "nope.yml")


@pytest.mark.parametrize("body, message", [
    ("sample_values: abc\ndatabases: []", "`sample_values` must be a whole number >= 0, got 'abc'"),
    ("sample_values: -1\ndatabases: []", "`sample_values` must be a whole number"),
    ("sample_value_chars: [1]\ndatabases: []", "`sample_value_chars` must be a whole number"),
    ("databases: [{type: sqlite, path: 123}]", r"databases\[0\]: `path` must be a non-empty string, got 123"),
    ("databases: [{type: sqlite, path: null}]", "`path` must be a non-empty string, got None"),
    ("databases: [{type: sqlite, glob: [a]}]", "`glob` must be a non-empty string"),
    ("databases: [{type: sqlite, path: x, id: 42}]", "`id` must be a non-empty string, got 42"),
    ("databases: [{type: [sqlite], path: x}]", "type must be one of"),
    ("databases: []\nexamples: [{path: 7}]", r"examples\[0\]: `path` must be a non-empty string"),
])
def test_wrong_types_in_sources_are_one_line_errors(tmp_path, body, message):
    """Before: int('abc'), Path / 123 and `[..] in tuple` raised ValueError/TypeError tracebacks."""
    (tmp_path / "s.yml").write_text(body)
    with pytest.raises(SourcesConfigError, match=message):
        load_sources(tmp_path / "s.yml")


def test_sources_file_not_utf8(tmp_path):
    (tmp_path / "s.yml").write_bytes(b"# caf\xe9\ndatabases: []\n")
    with pytest.raises(SourcesConfigError, match=r"not valid UTF-8 \(byte 0xe9"):
        load_sources(tmp_path / "s.yml")


def test_url_sources_parse_and_refuse_literal_passwords(tmp_path):
    (tmp_path / "s.yml").write_text(
        "databases:\n"
        "  - {type: url, url: 'postgresql+psycopg://reader:${PG_PASSWORD}@db.internal/sales', id: sales,\n"
        "     schemas: [public, hr], exclude_tables: ['*_tmp'], per_schema: true}\n"
        "  - {type: url, url: 'mysql+pymysql://reader@mysql.internal', databases: [crm, billing]}\n")
    first, second = load_sources(tmp_path / "s.yml").databases
    assert first.type == "url" and first.id == "sales" and first.server.schemas == ("public", "hr")
    assert first.server.exclude_tables == ("*_tmp",) and first.server.per_schema
    assert second.server.databases == ("crm", "billing") and second.id is None
    for body, message in [
        ("{type: url, url: 'postgresql://reader:hunter2@h/db'}", "holds a secret \\(the password\\)"),
        ("{type: url, url: 'postgresql://reader@h/db?password=hunter2'}", "holds a secret \\(query parameter password"),
        ("{type: url, url: 'postgresql://reader:hun/ter2@h/db'}", "holds a secret \\(the password\\)"),
        ("{type: url, url: 'postgresql://h/db', password: x}", "unknown setting"),
        ("{type: url, url: 'postgresql://h/db', per_schema: 'yes'}", "per_schema"),
        ("{type: url, url: 'postgresql://h/db', schemas: public}", "list of names"),
        ("{type: url}", "`url` must be a non-empty string"),
    ]:
        (tmp_path / "bad.yml").write_text(f"databases:\n  - {body}\n")
        with pytest.raises(SourcesConfigError, match=message):
            load_sources(tmp_path / "bad.yml")
