// The agent's loop (loop.py, the same steps and the same record of them) through the
// TypeScript SDK's own Client and StdioClientTransport with their defaults: a 60 s request
// timeout, no progress handler, no capabilities, every structured result validated against
// the tool's output schema (the SDK does it once tools/list has been read). No model is called.
//
// Usage: node ts_loop.cjs NODE_MODULES SERVER_SCRIPT DB_PATH. Prints the steps as JSON.
"use strict";

const path = require("node:path");
const { spawn } = require("node:child_process");
const { createRequire } = require("node:module");

const [modules, script, dbPath] = process.argv.slice(2);
const sdk = createRequire(path.join(modules, "driver.cjs"));
const { Client } = sdk("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = sdk("@modelcontextprotocol/sdk/client/stdio.js");
const { DEFAULT_REQUEST_TIMEOUT_MSEC } = sdk("@modelcontextprotocol/sdk/shared/protocol.js");

// The next call a message spells out: get_escalation(7, wait_seconds=4, known_revision=2).
const NEXT_WAIT = /get_escalation\((\d+), wait_seconds=(\d+)(?:, known_revision=(\d+))?\)/;
const MAX_POLLS = 30; // each as long as the message asks: a bound against a hang, never reached
const ERROR = "TypeError: unsupported operand type(s) for +: 'int' and 'str'";

class Stopped extends Error {}

const steps = [];

function named(error) {
  return `${error && error.name ? error.name : "Error"}: ${error && error.message ? error.message : error}`;
}

async function step(client, tool, args, mayRefuse = false) {
  let result;
  try {
    result = await client.callTool({ name: tool, arguments: args });
  } catch (error) {
    steps.push({ tool, arguments: args, raised: named(error) });
    throw new Stopped(tool);
  }
  const text = (result.content || []).map((block) => block.text || "").join(" ");
  if (result.isError) {
    if (!mayRefuse) {
      steps.push({ tool, arguments: args, raised: `ToolError: ${text}` });
      throw new Stopped(tool);
    }
    steps.push({ tool, arguments: args, refused: text });
    return { refused: text };
  }
  const structured = result.structuredContent || JSON.parse(text);
  steps.push({ tool, arguments: args, result: structured });
  return structured;
}

function answer(escalationId) {
  // The operator's answer, from the CLI in a process of its own (started, not awaited).
  const operator = spawn(
    script,
    ["--db", dbPath, "escalations", "respond", String(escalationId), "--guidance", "Cast the input with int() first"],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  operator.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve) => operator.on("close", (code) => resolve({ code, stderr })));
}

async function follow(client, message, escalationId) {
  let operator = null;
  for (let poll = 0; poll < MAX_POLLS; poll += 1) {
    const asked = NEXT_WAIT.exec(message);
    if (asked === null) {
      steps.push({ stopped: `no wait asked for in: ${message}` });
      throw new Stopped("follow");
    }
    const args = { escalation_id: Number(asked[1]), wait_seconds: Number(asked[2]) };
    if (asked[3] !== undefined) args.known_revision = Number(asked[3]);
    const polled = await step(client, "get_escalation", args);
    if (polled.status !== "pending") break;
    if (operator === null && escalationId != null) operator = answer(escalationId); // while the next wait runs
    message = polled.message;
  }
  if (operator !== null) {
    const { code, stderr } = await operator;
    steps.push({ operator: code, stderr: stderr.slice(-2000) });
  }
}

async function withdraw(client, escalationId, taskId, agentId) {
  const args = { escalation_id: escalationId, response_type: "withdraw" };
  const refused = (await step(client, "resolve_escalation", args, true)).refused;
  if (refused === undefined) return;
  if (refused.includes("agent_id")) {
    await step(client, "resolve_escalation", { ...args, agent_id: agentId });
    return;
  }
  await step(client, "start_task", { title: "Fix the adder", task_id: taskId, agent_id: agentId });
  await step(client, "resolve_escalation", args);
}

async function run(client, taskId, agentId) {
  await step(client, "start_task", { title: "Fix the adder", task_id: taskId, agent_id: agentId });
  let failed = {};
  for (const line of [3, 3, 3]) {
    failed = await step(client, "record_failure", { task_id: taskId, message: ERROR, file: "src/calc/add.py", line });
  }
  const escalation = failed.escalation || {};
  await follow(client, failed.message, escalation.escalation_id);
  await step(client, "acknowledge_response", { escalation_id: escalation.escalation_id });
  await step(client, "report_progress", {
    task_id: taskId, files_modified: ["src/calc/add.py"], tests_passed: 4, tests_failed: 0, outcome: "success",
  });
  const asked = await step(client, "raise_escalation", { task_id: taskId, reason: "Which rounding mode do totals use?" });
  await withdraw(client, (asked.escalation || {}).escalation_id, taskId, agentId);
}

async function main() {
  const client = new Client({ name: "ts-loop", version: "1.0.0" });
  const transport = new StdioClientTransport({ command: script, args: ["--db", dbPath], stderr: "ignore" });
  await client.connect(transport);
  const listed = await client.listTools(); // as a host does before its first call; loads the output schemas
  try {
    await run(client, "ts-0", "agent-7");
  } catch (error) {
    if (!(error instanceof Stopped)) steps.push({ raised: named(error) });
  }
  await client.close();
  const seen = {
    timeout_ms: DEFAULT_REQUEST_TIMEOUT_MSEC,
    tools: listed.tools.length,
    with_output_schema: listed.tools.filter((tool) => tool.outputSchema).length,
    steps,
  };
  process.stdout.write(`${JSON.stringify(seen)}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
