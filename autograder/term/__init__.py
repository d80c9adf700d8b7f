"""The end of term, from the grades a class has: `lms` writes them for Canvas's gradebook,
`similarity` lists answers that look alike for a person to read."""
