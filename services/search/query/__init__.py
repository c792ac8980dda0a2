"""How a query is read: its language (words, phrases, exclusions, OR, operators) and the
spelling help and completions drawn from the words the index holds. Pure: no segment."""
