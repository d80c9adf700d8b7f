"""What runs inside the student's sandbox: the grading kernel (`kernel`, `service`, which
answers the grader's data requests and decides nothing) and the warm-kernel fork server
(`forks`, `namespaces`). Nothing here imports the trusted side; nothing here is trusted."""
