"""type: schema_json - parsing, per-line errors, fingerprint."""

import json
import re

import pytest

from dbrouter.sources.base import SourceSpec, check_foreign_keys
from dbrouter.sources.schema_json import fingerprint_schema_json, read_schema_json


def test_schema_json_and_malformed_parts(tmp_path):
    obj = {"db_id": "hr", "tables": [
        {"name": "emp", "label": "employee", "columns": [{"name": "id", "type": "number", "primary_key": True},
                                                         {"label": "no name"}]},
        {"label": "nameless"}],
        "foreign_keys": [{"table": "emp"}]}
    (tmp_path / "hr.jsonl").write_text(json.dumps(obj) + "\nnot json\n" + json.dumps({"tables": []}) + "\n")
    (snap,), bad = read_schema_json(SourceSpec("schema_json", tmp_path / "hr.jsonl"))
    assert [(i.object_name.split(":")[-1], i.severity) for i in bad] == [("2", "error"), ("3", "error")]
    assert "not valid JSON" in bad[0].message and "needs `db_id`" in bad[1].message
    assert snap.db_id == "hr" and [t.name for t in snap.tables] == ["emp"]
    assert len(snap.tables[0].columns) == 1
    messages = " | ".join(i.message for i in snap.issues)
    assert "table without a name" in messages and "column without a name" in messages
    assert "malformed foreign key" in messages


def test_schema_json_invalid_json(tmp_path):
    (tmp_path / "x.json").write_text("{not json")
    snaps, bad = read_schema_json(SourceSpec("schema_json", tmp_path / "x.json"))
    assert snaps == [] and "not valid JSON" in bad[0].message


@pytest.mark.parametrize("table, message", [
    ({"name": 42}, r"tables\[0\].name must be a string, got 42 \(int\)"),
    ({"name": "t", "label": ["x"]}, r"tables\[0\].label must be a string"),
    ({"name": "t", "columns": "abc"}, r"tables\[0\].columns must be a list"),
    ({"name": "t", "columns": [{"name": "c", "type": 5}]}, r"tables\[0\].columns\[0\].type must be a string"),
    ({"name": "t", "columns": [{"name": "c", "primary_key": "yes"}]},
     r"columns\[0\].primary_key must be true or false, got \"yes\""),
    ({"name": "t", "columns": [{"name": {"x": 1}}]}, r"columns\[0\].name must be a string"),
    ({"name": "t", "columns": ["c"]}, r"columns\[0\] must be an object"),
    ({"name": "t", "columns": [{"name": "c", "samples": "abc"}]}, r"columns\[0\].samples must be a list"),
    ("t", r"tables\[0\] must be an object"),
])
def test_schema_json_wrong_types_leave_that_database_out_with_its_place(tmp_path, table, message):
    """Before: label_of(42) etc. raised TypeError/AttributeError and aborted the whole ingest."""
    lines = [json.dumps({"db_id": "bad", "tables": [table]}),
             json.dumps({"db_id": "good", "tables": [{"name": "t", "columns": [{"name": "c"}]}]})]
    (tmp_path / "s.jsonl").write_text("\n".join(lines) + "\n")
    snaps, bad = read_schema_json(SourceSpec("schema_json", tmp_path / "s.jsonl"))
    assert [s.db_id for s in snaps] == ["good"]
    assert [(i.db_id, i.severity) for i in bad] == [("bad", "error")]
    assert re.search(message, bad[0].message), bad[0].message
    assert "fix the schema file" in bad[0].message or "must be an object" in bad[0].message


def test_schema_json_db_id_must_be_a_string(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps({"db_id": ["x"], "tables": []}))
    snaps, bad = read_schema_json(SourceSpec("schema_json", tmp_path / "s.json"))
    assert snaps == [] and "`db_id` (a string)" in bad[0].message


def test_schema_json_latin1_byte_is_an_issue_for_that_line_only(tmp_path):
    """Before: read_text(encoding='utf-8') raised UnicodeDecodeError out of the ingest."""
    good = json.dumps({"db_id": "good", "tables": [{"name": "t", "columns": [{"name": "c"}]}]}).encode()
    bad = b'{"db_id": "caf\xe9", "tables": []}'
    (tmp_path / "s.jsonl").write_bytes(bad + b"\n" + good + b"\n")
    snaps, issues = read_schema_json(SourceSpec("schema_json", tmp_path / "s.jsonl"))
    assert [s.db_id for s in snaps] == ["good"]
    assert issues[0].object_name.endswith("s.jsonl:1") and issues[0].severity == "error"
    assert "not valid UTF-8 (byte 0xe9" in issues[0].message
    (tmp_path / "one.json").write_bytes(bad)
    snaps, issues = read_schema_json(SourceSpec("schema_json", tmp_path / "one.json"))
    assert snaps == [] and "file is not valid UTF-8 (byte 0xe9" in issues[0].message


def test_schema_json_foreign_key_without_ref_column_uses_the_single_primary_key(tmp_path):
    obj = {"db_id": "j", "tables": [
        {"name": "a", "columns": [{"name": "id", "primary_key": True}]},
        {"name": "b", "columns": [{"name": "a_ref"}]}],
        "foreign_keys": [{"table": "b", "column": "a_ref", "ref_table": "a"},
                         {"table": "b", "column": "a_ref", "ref_table": 7}]}
    (tmp_path / "j.json").write_text(json.dumps(obj))
    (snap,), _ = read_schema_json(SourceSpec("schema_json", tmp_path / "j.json"))
    check_foreign_keys(snap)
    assert [(f.table, f.ref_table, f.ref_column) for f in snap.foreign_keys] == [("b", "a", "id")]
    assert "malformed foreign key" in snap.issues[0].message



def test_schema_json_fingerprint_ignores_layout_and_sees_content(tmp_path):
    path = tmp_path / "hr.jsonl"
    a = {"db_id": "hr", "tables": [{"name": "emp", "columns": [{"name": "id", "type": "int"}]}]}
    b = {"db_id": "pay", "tables": []}
    path.write_text(json.dumps(a) + "\n" + json.dumps(b) + "\nnot json\n")
    found, bad = fingerprint_schema_json(SourceSpec("schema_json", path))
    assert set(found) == {"hr", "pay"} and list(bad) == ["hr.jsonl:3"]
    path.write_text(json.dumps(a, indent=None, sort_keys=True, separators=(", ", ": ")) + "\n"
                    + json.dumps(b) + "\n")
    again, bad = fingerprint_schema_json(SourceSpec("schema_json", path))
    assert again == found and bad == {}
    a["tables"][0]["columns"][0]["type"] = "text"
    path.write_text(json.dumps(a) + "\n" + json.dumps(b) + "\n")
    changed, _ = fingerprint_schema_json(SourceSpec("schema_json", path))
    assert changed["hr"] != found["hr"] and changed["pay"] == found["pay"]
