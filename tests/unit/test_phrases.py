from python_udfs.phrases import MAX_CONTENT_WORDS, content_words, label_tokens, normalize_word, question_spans


def test_content_words_drop_stop_sql_words_and_numbers():
    assert content_words("How many different singers from France are older than 30?") == ["singer", "france", "older"]
    assert content_words("List all the names, in ascending order.") == ["name"]
    assert content_words(None) == [] and content_words("   ") == []


def test_normalize_word_singularises_both_ways():
    assert [normalize_word(w) for w in ("cities", "matches", "singers", "status", "class")] == [
        "city", "match", "singer", "status", "class"]


def test_spans_cover_consecutive_content_words():
    spans = dict(question_spans("first name of each student", 3))
    assert spans == {"first": [0], "first name": [0, 1], "first name student": [0, 1, 2], "name": [1],
                     "name student": [1, 2], "student": [2]}
    assert question_spans("the of and", 3) == []


def test_huge_question_is_capped():
    assert len(content_words("word " * 100_000 + "singer")) == MAX_CONTENT_WORDS


def test_label_tokens_split_snake_and_camel_case():
    assert label_tokens("singer_in_concert", "firstName", None, "Song Names") == [
        "concert", "first", "in", "name", "singer", "song"]


def test_value_tokens_skip_free_text():
    from python_udfs.phrases import value_tokens

    assert value_tokens("Paris", "New York City", None, "") == ["city", "new", "paris", "york"]
    # a comment is free text: "vendors" inside it names nothing
    assert value_tokens("please call the vendors before noon") == []
