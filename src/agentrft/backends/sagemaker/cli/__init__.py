"""The commands and flags the sagemaker backend adds to `agentrft`: `jobs`, `doctor`,
`dataset upload`, `cost`, `runtime serve`, `deploy`, `smoke-test`, and its `train`/`eval`
flags."""
