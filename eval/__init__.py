"""`make eval`: how much of LoCoMo's gold evidence prepared context carries (see docs/evaluation.md).

LoCoMo (CC BY-NC 4.0) is read from `../shared/data/locomo` (or `POWERCONTEXT_EVAL_LOCOMO`) at run
time by `make eval` alone and never copied into the repository. Conversations 1-5 are the dev split
(tune there), 6-10 the test split (report only). `make test` runs the harness on
`eval/fixtures/smoke.json`, two short conversations in LoCoMo's format written for the project.
"""
