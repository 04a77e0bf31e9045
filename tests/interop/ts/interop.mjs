// Drive MCP servers with the official TypeScript MCP SDK client and report every result.
//
//   node interop.mjs PLAN.json > REPORT.json
//
// PLAN.json: {"timeoutMs": 30000, "connections": [CONNECTION, ...]}, where a CONNECTION is
//   {"name": "stdio", "transport": "stdio", "command": "prove-gym", "args": [...], "env": {...},
//    "calls": [CALL, ...]}
//   {"name": "http:calendar", "transport": "http", "url": "http://127.0.0.1:8000/calendar/mcp",
//    "headers": {"authorization": "Bearer ..."}, "calls": [CALL, ...]}
// and a CALL is {"tool": "list_calendars", "arguments": {...}, "expect": "result" | "rpc_error"}.
//
// Each connection lists the tools first (so the client compiles every output-schema validator,
// as MCP hosts do) and then makes its calls in order, one at a time. The client itself checks
// each result against the protocol's schema and each tool's outputSchema; whatever it throws
// is recorded. REPORT.json: {"sdk": VERSION, "connections": [{"name", "tools": [{"name",
// "outputSchema"}], "results": [RESULT, ...], "failure": null | MESSAGE}], "unexpected": [...]},
// a RESULT being {"isError", "text", "structuredContent", "meta"} or {"rpcError": {"code",
// "message"}}. Anything unexpected (a protocol error where a result was expected, a result
// where an error was, a connection that failed) is listed under "unexpected", printed to
// stderr, and makes the exit status 1.

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const SDK_VERSION = JSON.parse(
  readFileSync(
    new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url),
    "utf8",
  ),
).version;

function transportFor(connection) {
  if (connection.transport === "stdio") {
    return new StdioClientTransport({
      command: connection.command,
      args: connection.args ?? [],
      env: connection.env,
      stderr: "pipe",
    });
  }
  if (connection.transport === "http") {
    return new StreamableHTTPClientTransport(new URL(connection.url), {
      requestInit: { headers: connection.headers ?? {} },
    });
  }
  throw new Error(`unknown transport ${JSON.stringify(connection.transport)}`);
}

async function listAllTools(client, options) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {}, options);
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

async function run(connection, timeoutMs, unexpected) {
  const report = { name: connection.name, tools: [], results: [], failure: null };
  const client = new Client({ name: "prove-gym-interop", version: "1.0.0" });
  const transport = transportFor(connection);
  const stderr = [];
  transport.stderr?.on("data", (chunk) => {
    if (stderr.length < 200) stderr.push(String(chunk));
  });
  const options = { timeout: timeoutMs };
  try {
    await client.connect(transport, options);
    const tools = await listAllTools(client, options);
    report.tools = tools.map((t) => ({ name: t.name, outputSchema: Boolean(t.outputSchema) }));
    for (const [index, call] of connection.calls.entries()) {
      const where = `${connection.name} #${index} ${call.tool}(${JSON.stringify(call.arguments)})`;
      try {
        const result = await client.callTool(
          { name: call.tool, arguments: call.arguments },
          undefined,
          options,
        );
        report.results.push({
          isError: result.isError === true,
          text: result.content?.length === 1 ? result.content[0].text : result.content,
          structuredContent: result.structuredContent ?? null,
          meta: result._meta ?? null,
        });
        if (call.expect === "rpc_error") unexpected.push(`${where}: a result, not an error`);
      } catch (error) {
        report.results.push({ rpcError: { code: error.code ?? null, message: String(error.message) } });
        if (call.expect !== "rpc_error") unexpected.push(`${where}: ${error.message}`);
      }
    }
  } catch (error) {
    report.failure = `${error.message}\n${stderr.join("").slice(-4000)}`;
    unexpected.push(`${connection.name}: ${report.failure}`);
  } finally {
    if (transport instanceof StreamableHTTPClientTransport && transport.sessionId) {
      await transport.terminateSession().catch(() => {});
    }
    await client.close().catch(() => {});
  }
  return report;
}

async function main() {
  if (process.argv.length !== 3) {
    process.stderr.write("usage: node interop.mjs PLAN.json > REPORT.json\n");
    process.exit(2);
  }
  const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
  const timeoutMs = plan.timeoutMs ?? 30000;
  const unexpected = [];
  const connections = [];
  for (const connection of plan.connections) {
    connections.push(await run(connection, timeoutMs, unexpected));
  }
  process.stdout.write(JSON.stringify({ sdk: SDK_VERSION, connections, unexpected }));
  if (unexpected.length > 0) {
    process.stderr.write(`${unexpected.length} unexpected outcome(s):\n${unexpected.slice(0, 50).join("\n")}\n`);
    process.exit(1);
  }
}

await main();
