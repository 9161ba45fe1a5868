"""Drives `react-docstore serve` and `react-docstore mcp` with clients this project did not write:
DSPy's `dspy.ColBERTv2` retrieval client (GET and POST) and the MCP Python SDK's stdio client.

    python tests/clients/real_clients.py target/debug/react-docstore fixtures/index/pages.jsonl

Run by .ci/run after `pip install` of the pinned versions; loopback only, no other network.
"""

import asyncio
import re
import subprocess
import sys

BINARY, CORPUS = sys.argv[1], sys.argv[2]
DOCSTORE = f"corpus:{CORPUS}"


def check_dspy() -> None:
    import dspy

    server = subprocess.Popen(
        [BINARY, "serve", "--listen", "127.0.0.1:0", "--docstore", DOCSTORE],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        startup = server.stderr.readline()
        address = re.search(r"http://([0-9.]+:[0-9]+):", startup).group(1)
        url = f"http://{address}/api/search"
        for post in (False, True):
            retriever = dspy.ColBERTv2(url=url, post_requests=post)
            hits = retriever("railway station Edinburgh", k=3)
            assert len(hits) == 3, hits
            text = hits[0]["text"]
            assert text.startswith("Edinburgh Waverley railway station | "), text
            assert [hit["rank"] for hit in hits] == [1, 2, 3], hits
            assert abs(sum(hit["prob"] for hit in hits) - 1.0) < 1e-6, hits
        print(f"dspy {dspy.__version__}: ColBERTv2 GET and POST ok")
    finally:
        server.terminate()
        assert server.wait(timeout=30) == 0, "serve did not exit 0 on SIGTERM"


async def check_mcp() -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(command=BINARY, args=["mcp", "--docstore", DOCSTORE])
    async with stdio_client(parameters) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            assert sorted(tool.name for tool in tools.tools) == ["lookup", "search"], tools
            found = await session.call_tool("search", {"query": "Special Air Service"})
            text = found.content[0].text
            assert text.startswith("The Special Air Service (SAS) is a special forces unit"), text
            looked = await session.call_tool("lookup", {"keyword": "regiment"})
            assert looked.content[0].text == (
                "(Result 1 / 1) The SAS was founded in 1941 as a regiment, "
                "and later reconstituted as a corps in 1950."
            ), looked
    print("mcp SDK stdio client: initialize, tools/list, search then lookup ok")


check_dspy()
asyncio.run(check_mcp())
