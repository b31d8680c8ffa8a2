import pytest

from dbrouter.errors import SourcesConfigError
from dbrouter.sources import load_sources


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
