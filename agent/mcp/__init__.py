"""The ops tools as an MCP server (``agent mcp``), for coding agents that already drive the work.

``server.py`` builds the server; ``tool_calls.py`` lists the tools with their typed schemas and turns a
call into a result; ``calls.py`` runs each call like a run step (journaled, saved, one at a time);
``approval.py`` puts approval questions to the client's user (elicitation) and records the verdict;
``resources.py`` serves the state document and the hand-over note; ``prompt.py`` the bring-up prompt;
``transport.py`` stdio and streamable HTTP (loopback, or a bearer token).
"""
