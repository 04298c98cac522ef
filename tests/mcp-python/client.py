"""The official MCP Python SDK's client driving genai's MCP server (tests/it/mcp_server_python.rs).

Arguments: `stdio GENAI_BINARY WORKSPACE` for `genai mcp`, or `http URL` for `genai serve`'s
`/mcp` with the serve token from the environment's GENAI_TOKEN. It declares elicitation and accepts what
genai asks. It lists the tools, reads a file, reads a secret file (refused), makes an edit
that genai asks about (accepted through elicitation), and prints one JSON object.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp import types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def result(r):
    return {
        "isError": bool(r.is_error),
        "text": "\n".join(c.text for c in r.content if getattr(c, "type", "") == "text"),
    }


def transport(args):
    """The client's streams to the server the arguments name."""
    if args[0] == "stdio":
        genai, root = args[1], args[2]
        server = StdioServerParameters(
            command=genai, args=["mcp", "--root", root], env=dict(os.environ)
        )
        return stdio_client(server)
    headers = {"Authorization": "Bearer " + os.environ["GENAI_TOKEN"]}
    return streamable_http_client(args[1], http_client=create_mcp_http_client(headers=headers))


async def main(args):
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"always": False})

    async with transport(args) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write, elicitation_callback=elicit) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            read_file = await session.call_tool("read_file", {"path": "src/lib.rs"})
            secret = await session.call_tool("read_file", {"path": ".env"})
            edit = await session.call_tool(
                "edit_file", {"path": "src/lib.rs", "old_text": "41", "new_text": "43"}
            )
            prompts = await session.list_prompts()
    print(json.dumps({
        "server": init.server_info.name,
        "tools": sorted(t.name for t in tools.tools),
        "prompts": sorted(p.name for p in prompts.prompts),
        "read": result(read_file),
        "secret": result(secret),
        "edit": result(edit),
        "asked": asked,
    }))


asyncio.run(main(sys.argv[1:]))
