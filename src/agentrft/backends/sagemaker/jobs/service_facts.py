"""What we know about the managed service, in one place, each fact marked with its source.

Marks (see shared/design/sagemaker-contract.md): [model] botocore's service JSON; [sdk] the
SageMaker Python SDK source (sagemaker-train 1.27.0); [doc] AWS docs; [sample] the public
Wordle sample only; [?] unverified or conflicting. When the live service disagrees with a
[?] fact, change it here and nowhere else.
"""

from __future__ import annotations

# -- Control plane: CreateJob / DescribeJob / ListJobs / StopJob ------------------------

#: Job category of a training job [model].
TRAINING_CATEGORY = "AgentRFT"
#: Job category of an evaluation job [model].
EVALUATION_CATEGORY = "AgentRFTEvaluation"
#: The JobConfigDocument schema version the SDK pins for both categories [sdk].
JOB_CONFIG_SCHEMA_VERSION = "1.0.0"
#: Terminal JobStatus values [model].
TERMINAL_STATUSES = frozenset({"Completed", "Failed", "Stopped", "DeleteFailed"})
#: botocore's floor for CreateJob and the sagemakerjobruntime service [model].
MIN_BOTOCORE = "1.43.20"
#: CloudWatch log group of training jobs [sdk].
TRAINING_LOG_GROUP = "/aws/sagemaker/Job/AgentRFT"

# -- Base model resolution --------------------------------------------------------------

#: The hub that holds the base models (env SAGEMAKER_HUB_NAME overrides it in the SDK) [sdk].
PUBLIC_HUB = "SageMakerPublicHub"
#: Default base model (hub content name) [sample].
DEFAULT_BASE_MODEL = "openai-reasoning-gpt-oss-20b"
#: The recipe technique of multi-turn RL in a hub model's RecipeCollection [sdk].
MTRL_TECHNIQUE = "MTRL"
#: Recipe key holding the S3 URI of the hyperparameter specs for serverless jobs [sdk].
RECIPE_OVERRIDE_PARAMS_KEY = "SmtjOverrideParamsS3Uri"
#: Recipe key that marks a serverless recipe [sdk].
RECIPE_TEMPLATE_KEY = "SmtjRecipeTemplateS3Uri"
#: Default names of the two model package groups the SDK get-or-creates [sdk].
OUTPUT_GROUP_SUFFIX = "-mtrl-mpg"
CHECKPOINT_GROUP_SUFFIX = "-mtrl-checkpoint-mpg"
#: AgentCore qualifier sent with the runtime ARN [sdk].
AGENTCORE_QUALIFIER = "DEFAULT"
#: The sample says CreateJob requires MlflowConfig; the SDK treats it as optional [?].
MLFLOW_REQUIRED = True

# -- Hyperparameters --------------------------------------------------------------------

#: Training hyperparameters, their ranges and the recipe's per-model defaults live in
#: `recipe.py` (the service's published recipe template, [recipe], and the [doc] table).

#: Hyperparameter names an AgentRFTEvaluation job accepts, per the sample [sample]. The
#: SDK's evaluator sends `sampling_temperature`/`top_p`/`max_tokens` instead, which the
#: sample reports the service rejects [?].
EVALUATION_HYPERPARAMETERS = (
    "eval_group_size",
    "temperature",
    "sampling_top_p",
    "sampling_max_tokens",
    "pass_k_values",
    "success_threshold",
    "rollout_timeout",
    "rollout_max_concurrency",
    "rollout_max_retries",
)
#: Default StoppingCondition.MaxRuntimeInSeconds of an evaluation job [?] (the launch
#: post's 128-word evaluation took 4–7 minutes).
DEFAULT_EVALUATION_MAX_RUNTIME_S = 3600
#: Evaluation jobs that may run at once under the default quota [sample].
EVALUATION_CONCURRENCY_QUOTA = 1

# -- ServiceOutput (inside the JobConfigDocument that DescribeJob returns) [sdk] ----------

SERVICE_OUTPUT = "ServiceOutput"
OUTPUT_MODEL_PACKAGE_ARN = "OutputModelPackageArn"
BILLABLE_TOKEN_USAGE = "BillableTokenUsage"
#: Keys of BillableTokenUsage [sdk] -> our names.
BILLABLE_TOKEN_KEYS = {
    "PrefillTokenCount": "prefill",
    "SampleTokenCount": "sampling",
    "TrainTokenCount": "training",
}
PROGRESS_INFO = "ProgressInfo"
ROLLOUT_INFO = "RolloutInfo"
MLFLOW_DETAILS = "MlflowDetails"
#: Evaluation results [sample]; the exact shape is not in any model or SDK [?], so the
#: reader below accepts the spellings we have seen or expect.
EVALUATION_METRICS = "EvaluationMetrics"
#: Key spellings of a pass@k entry, `{k}` replaced by the k value [?].
PASS_AT_K_SPELLINGS = ("pass@{k}", "pass_at_{k}", "PassAt{k}", "pass_{k}")
#: Nested mappings of pass@k, keyed by k [?].
PASS_AT_K_CONTAINERS = ("PassAtK", "pass_at_k", "pass@k")
#: Key spellings of the mean episode reward [?].
MEAN_REWARD_SPELLINGS = ("MeanReward", "mean_reward", "reward_mean", "AverageReward", "reward")
#: Key spellings of the solve (success) rate [?].
SUCCESS_RATE_SPELLINGS = ("SuccessRate", "success_rate", "solve_rate")

# -- IAM [doc, sample] ------------------------------------------------------------------

#: The principal that assumes the job role. NOT sagemaker.amazonaws.com: that one fails
#: with "Could not assume role" [doc, sample].
JOB_ROLE_PRINCIPAL = "job.sagemaker.amazonaws.com"
WRONG_JOB_ROLE_PRINCIPAL = "sagemaker.amazonaws.com"
JOB_ROLE_TRUST_ACTIONS = ("sts:AssumeRole", "sts:TagSession")
JOB_ROLE_MANAGED_POLICY = "AmazonSageMakerJobFullAccess"
RUNTIME_ROLE_PRINCIPAL = "bedrock-agentcore.amazonaws.com"
RUNTIME_ROLE_MANAGED_POLICY = "AmazonSageMakerJobRuntimeAccess"

# -- Billing (see cost.py for the prices, which are assumptions) ------------------------

#: The launch post's 100-step gpt-oss-20b Wordle run, us-east-1 [doc: launch post].
LAUNCH_RUN = {
    "rollouts": 105_486,
    "prefill_tokens": 491.6e6,
    "sampling_tokens": 159.7e6,
    "training_tokens": 643.3e6,
    "cost_usd": 339.0,
    "max_steps": 100,
}
