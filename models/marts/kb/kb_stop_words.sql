-- The words the re-rank never maps (python_udfs.phrases.STOP_WORDS), for the pure-SQL path's
-- content words.
select unnest(dbrouter_stop_words()) as word
