"""The end of term, from the grades a class has: `lms` writes them for Canvas's gradebook
(`canvas`: the format, reading the roster and writing the file), `similarity` lists answers
that look alike for a person to read (`fingerprints`: one answer normalised and
fingerprinted)."""
