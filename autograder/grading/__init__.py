"""A submission's way from the instructor's hands to a grade and its feedback.

`intake` reads what was handed in, `repair` readies each submission for the engine,
`store` keeps the results and the class gradebook, `rules` the rules a grading folder was
graded under (late policy, due dates, limits), `reports` and `feedback` show them, and
`mistakes` (with `mistakes_page`) groups what the class got wrong and names who to follow
up. `classgrade` grades a class (`course-grade class`), `selfgrade` a learner's own
notebook (`course-grade self`), `autograde` notebooks held in memory (self-grading, the
mutants).
"""
