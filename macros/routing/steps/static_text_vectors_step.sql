{#-
  The pure-SQL static embedder: the phrase embedder's vector of each text, computed from the
  KB's piece table with no UDF. model2vec's encode is the normalised mean of a text's piece
  vectors, the hash embedder's the normalised sum of its feature vectors, so the sum of the
  pieces' raw vectors points the same way (cosine ignores the scale).

    wordpiece: the BERT pre-tokenisation (control characters dropped, lower case, accents
      stripped, each CJK character and each punctuation character a word of its own, split on
      white space), then WordPiece's greedy longest-match-first split of each distinct word over
      kb_static_pieces (a recursive walk); a word with no split, or longer than 100 characters,
      is [UNK], which model2vec drops; at most kb_static_model.max_pieces pieces per text.
    hash: the hash embedder's features: each word ([\p{L}\p{N}_]+ of the lower-cased text) and
      '#' + each of its character trigrams.

  Args:
    texts: name of a CTE with (text_id, text).
    name: name of the produced CTE; the helper CTEs are called <name>_*.

  Consumes: kb_static_pieces, kb_static_model; the tokenizer kind of this build (static_tokenizer).
    The entry point must open its CTE list with `with recursive` (the WordPiece walk).
  Produces CTEs: <name>_words, ... and <name> (text_id, v_list FLOAT[]): one row per text with at
    least one known piece (a text without one has no row: its vector is NULL). Consumers cast
    v_list to FLOAT[dim] themselves, after any outer join: on DuckDB 2.0 a list-to-array cast
    inside a materialized CTE that is then left-joined fails ("Cannot cast list with length 0").
-#}
{% macro static_text_vectors_step(texts, name) -%}
  {{ return(adapter.dispatch('static_text_vectors_step', 'dbrouter')(texts, name)) }}
{%- endmacro %}

{% macro default__static_text_vectors_step(texts, name) -%}
  {{ exceptions.raise_compiler_error("static_text_vectors_step: adapter " ~ adapter.type() ~ " is not supported yet (argument texts: " ~ texts ~ "); DuckDB is supported") }}
{%- endmacro %}

{#- DuckDB: regexp_extract_all (RE2, Unicode classes) pre-tokenises; the sum of vectors is an
    unnest to (dimension, value) and a per-dimension sum, as DuckDB has no array-sum aggregate.
    The punctuation class is Unicode P plus ASCII's other symbols, as BERT's _is_punctuation. -#}
{% macro duckdb__static_text_vectors_step(texts, name) -%}
{%- set dim = dbrouter.get_var('dbrouter__embedding_dim') | int -%}
{%- set punct = "\\p{P}!-/:-@\\[-`{-~" -%}
{%- set cjk = "\\x{4E00}-\\x{9FFF}\\x{3400}-\\x{4DBF}\\x{20000}-\\x{2A6DF}\\x{2A700}-\\x{2B73F}\\x{2B740}-\\x{2B81F}\\x{2B820}-\\x{2CEAF}\\x{F900}-\\x{FAFF}\\x{2F800}-\\x{2FA1F}" -%}
{%- if dbrouter.static_tokenizer() == 'hash' %}
{{ name }}_words as materialized (
    select text_id, unnest(regexp_extract_all(lower(text), '[\p{L}\p{N}_]+')) as word
    from {{ texts }}
),
{{ name }}_features as (
    select text_id, word as piece from {{ name }}_words
    union all
    select text_id, '#' || substr(word, i + 1, 3)
    from (select text_id, word, unnest(range(greatest(1, length(word) - 2))) as i from {{ name }}_words)
),
{{ name }}_tokens as (
    select f.text_id, p.embedding
    from {{ name }}_features as f
    join {{ dbrouter.kb_relation('kb_static_pieces') }} as p on p.piece = f.piece
),
{%- else %}
{{ name }}_words as materialized (
    select text_id, unnest(ws) as word, unnest(range(len(ws))) as pos
    from (
        select text_id, regexp_extract_all(
            strip_accents(lower(regexp_replace(regexp_replace(text, '[\t\n\r]', ' ', 'g'), '[\p{Cc}\p{Cf}]', '', 'g'))),
            '[{{ cjk }}]|[^\s\p{Z}{{ punct }}{{ cjk }}]+|[{{ punct }}]') as ws
        from {{ texts }}
    )
),
{{ name }}_cands as (
    select word, i, unnest(range(i + 1, length(word) + 1)) as j
    from (select word, unnest(range(length(word))) as i
          from (select distinct word from {{ name }}_words where length(word) <= 100))
),
{{ name }}_next as materialized (
    select c.word, c.i, max(c.j) as j, arg_max(p.embedding, c.j) as embedding
    from {{ name }}_cands as c
    join {{ dbrouter.kb_relation('kb_static_pieces') }} as p
      on p.piece = case when c.i = 0 then '' else '##' end || substr(c.word, c.i + 1, c.j - c.i)
    group by c.word, c.i
),
{{ name }}_walk as (
    select word, i, j, 0 as step from {{ name }}_next where i = 0
    union all
    select n.word, n.i, n.j, w.step + 1
    from {{ name }}_walk as w
    join {{ name }}_next as n on n.word = w.word and n.i = w.j
),
{{ name }}_split as materialized (
    select w.word, w.step, n.embedding
    from {{ name }}_walk as w
    join {{ name }}_next as n on n.word = w.word and n.i = w.i
    where w.word in (select word from {{ name }}_walk where j = length(word))
),
{{ name }}_tokens as (
    select w.text_id, s.embedding
    from {{ name }}_words as w
    join {{ name }}_split as s on s.word = w.word
    qualify row_number() over (partition by w.text_id order by w.pos, s.step)
        <= coalesce((select max(max_pieces) from {{ dbrouter.kb_relation('kb_static_model') }}), 512)
),
{%- endif %}
{#- a plain sum, in whatever order the join gives (float_agg is not needed): the pieces' FLOAT
    values add in DOUBLE, exactly for a float16 model's values (multiples of 2^-24 below 2^16, so
    512 of them need 49 of DOUBLE's 53 bits) and to within DOUBLE's last bit otherwise, which the
    cast to FLOAT rounds away; ordering the sum cost retrieve_statements_sql 1.19x its time -#}
{{ name }}_sums as (
    select text_id, d, sum(x) as x
    from (select text_id, unnest(embedding) as x, unnest(range({{ dim }})) as d from {{ name }}_tokens)
    group by text_id, d
),
{{ name }} as materialized (
    select text_id, list(x order by d) as v_list
    from {{ name }}_sums
    group by text_id
)
{%- endmacro %}
