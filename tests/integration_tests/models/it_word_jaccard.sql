select {{ dbrouter.word_jaccard("'a b c'", "'b c d'") }} as half, {{ dbrouter.word_jaccard("'a b'", "'c'") }} as none_,
    {{ dbrouter.word_jaccard("''", "''") }} as both_empty
