from dbrouter.routing.mapping import parse_mapping

COLS = {("singer", "name"), ("singer", "age"), ("concert", "year")}


def test_parse_mapping_lines_and_na():
    out = parse_mapping("singers - Singer.Name\nold - singer.Age\nsingers - concert.Year\nmoon - N/A\n", "db", COLS)
    assert [(m.phrase, m.table_name, m.column_name) for m in out] == [
        ("singers", "Singer", "Name"), ("old", "singer", "Age"), ("singers", "concert", "Year"), ("moon", None, None)]


def test_parse_mapping_tolerates_fences_and_bullets():
    out = parse_mapping("```\n- singer - singer.name\n```", "db", COLS)
    assert out and out[0].column_name == "name"


def test_parse_mapping_rejects_prose_unknown_columns_and_empty():
    assert parse_mapping("Here are the mappings: singer is singer.name", "db", COLS) is None
    assert parse_mapping("singer - singer.height", "db", COLS) is None
    assert parse_mapping("singer - stadium.name", "db", COLS) is None
    assert parse_mapping("", "db", COLS) is None
