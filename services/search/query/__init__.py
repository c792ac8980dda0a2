"""How a query is read: how much of it is searched (``limits``), its language (words,
phrases, exclusions, OR, operators), why it may hold nothing to search for, and the spelling
help and completions drawn from the words the index holds. Pure: no segment."""
