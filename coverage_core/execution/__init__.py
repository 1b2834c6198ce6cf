"""Managed execution: registered test commands, a durable run queue, the process runner.

``registry`` holds commands and their approvals, ``queue`` the runs and their
state transitions (rows of the project store), ``runner`` one process group
with bounded capture, ``supervisor`` the run's direct child (a subreaper that
kills every descendant of the command), ``fingerprint`` what makes two runs the same execution,
``worker`` the threads that take queued runs, run them and ingest what they
wrote (reports as snapshots, a composite artifact as a composite snapshot),
``watchdog`` the process that stops a killed owner's runs at once, ``selectors``
the case arguments' grammar, checks and canonical form (and the no-link checkout
paths a registration names), ``words`` the characters a registration may hold
and how a word is quoted, ``display`` the one rendering of a registration,
``executable`` the identity of argv[0] an approval binds, ``ops`` the
four operations (register_test_command, run_test,
run_review, cancel_run). Threads and subprocesses only: no asyncio here.
"""
