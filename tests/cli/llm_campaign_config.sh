# Shared by the CLI tests that run a campaign through a model (llm_campaign.sh,
# llm_litellm_proxy.sh): llm_campaign_config SRC BACKEND ENDPOINT KEY_VARIABLE CONCURRENCY prints
# a config of one small task (relu, 4 candidates, one branch, the scripted worker's fast
# timings) whose agents ask `BACKEND` at `ENDPOINT` with the key in $KEY_VARIABLE, at most
# CONCURRENCY requests at once, repairs in 2 rounds, fake-model's prices set.
llm_campaign_config() {
  local src=$1 backend=$2 endpoint=$3 key_variable=$4 concurrency=$5
  cat <<TOML
gpus = [0]
[campaign]
tasks = ["$src/tasks/quickstart/19_relu.toml"]
output = "out"
candidates_per_task = 4
[search]
branches = 1
depth = 2
stop_patience = 2
finalists = 2
[bench]
trials = 1
warmup_ms = 0
min_timing_trials = 10
max_timing_ms = 1
[agents]
backend = "$backend"
endpoint = "$endpoint"
model = "fake-model"
api_key_env = "$key_variable"
max_concurrency = $concurrency
request_timeout_s = 60
retry_base_s = 0.01
repair_rounds = 2
prices = [ { model = "fake-model", input_per_mtok = 3.0, output_per_mtok = 15.0 } ]
[memory]
path = "memory"
TOML
}
