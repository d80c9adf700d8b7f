"""The grader's side, where no student code runs: one submission graded (`submission`,
`executor`), its test cells run here (`testcells`, `remote`), the sandboxed kernel started
and watched from outside (`session`, `cellrun`, `messages`, `sandbox`, `forkserver`,
`cpushare`, `cgroups`), the library copy the kernel gets (`withheld`), and the run's
secret the hidden tests draw their inputs from (`seeds`)."""
