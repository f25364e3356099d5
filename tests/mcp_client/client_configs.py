"""The client configs of docs/clients.md, started as their clients start them.

tests/all/docs.rs parses each config block into RUNBOX_TEST_CONFIGS ([{client, command,
args}], the built runbox first on PATH); each is started over stdio by the MCP Python SDK's
`Client` and runs a python `print("hello")`. Usage: client_configs.py configs
"""

import json
import os

from mcp import Client, StdioServerParameters

from harness import PROTOCOL, main, run_code, server_env

CONFIGS = json.loads(os.environ["RUNBOX_TEST_CONFIGS"])


async def configs():
    assert CONFIGS, "no configs"
    for config in CONFIGS:
        params = StdioServerParameters(
            command=config["command"], args=config["args"], env=server_env()
        )
        async with Client(params) as session:
            assert session.protocol_version == PROTOCOL["auto"], session.protocol_version
            result = await run_code(session, runtime="python", code='print("hello")')
            assert not result.is_error, (config, result)
            out = result.structured_content
            assert out["status"] == "completed", (config, out)
            assert out["stdout"] == "hello\n", (config, out)
        print(f"{config['client']}: {config['command']} {' '.join(config['args'])}: hello")


main({"configs": configs})
