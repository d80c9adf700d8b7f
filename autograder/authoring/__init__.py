"""Writing the course: `release` regenerates `notebooks/` from `solutions/`, `validation`
is nbgrader's Validate with an answer, `mutants` proves the tests on wrong and other
correct answers, `demo` builds a synthetic class, `button` is each notebook's
"Grade my notebook" button."""
