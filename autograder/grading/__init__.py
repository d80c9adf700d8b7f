"""A submission's way from the instructor's hands to a grade and its feedback.

`intake` reads what was handed in, `repair` readies each submission for the engine,
`store` keeps the results and the class gradebook, `reports` and `feedback` show them.
`classgrade` grades a class (`course-grade class`), `selfgrade` a learner's own notebook
(`course-grade self`), `autograde` notebooks held in memory (self-grading, the mutants).
"""
