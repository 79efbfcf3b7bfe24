"""The agent: one turn's plan (`plan`) and its run (`engine`: the provider, the tool
context, the agent loop of `loop`), turn scheduling (`scheduler`, over `turn`, `lanes` and
`eventlog`), the UI question broker (`questions`), attachments and the statistics of a
conversation (`stats`). Nothing here imports kward.rpc; progress is reported through
callbacks."""
