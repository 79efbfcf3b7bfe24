"""The agent: the turn loop (`loop`), turn scheduling (`turns`), event payloads
(`payloads`), the UI question broker (`questions`), attachments and the system prompt.
Nothing here imports kward.rpc; progress is reported through callbacks."""
