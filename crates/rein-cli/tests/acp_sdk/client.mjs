// An ACP client built on the official TypeScript SDK (@agentclientprotocol/sdk),
// driving the agent command given as arguments over stdio: one session in
// the working folder, one prompt, each permission answered by the option of
// kind ACP_CHOICE ("allow_once" or "reject_once"), chosen by kind, never by
// position. Prints one JSON line: the stop reason and what arrived, in order.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [command, ...args] = process.argv.slice(2);
const choice = process.env.ACP_CHOICE ?? "allow_once";
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const seen = [];

const app = acp
  .client({ name: "rein-acp-sdk-test" })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    seen.push({ kind: "permission", id: params.toolCall.toolCallId });
    const option = params.options.find((o) => o.kind === choice);
    return option
      ? { outcome: { outcome: "selected", optionId: option.optionId } }
      : { outcome: { outcome: "cancelled" } };
  })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    const u = params.update;
    seen.push({ kind: u.sessionUpdate, id: u.toolCallId ?? null, status: u.status ?? null });
  });

const stopReason = await app.connectWith(stream, async (ctx) => {
  await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  const session = await ctx.request(acp.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
  const answer = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: process.env.ACP_PROMPT ?? "write notes.txt" }],
  });
  return answer.stopReason;
});
console.log(JSON.stringify({ stopReason, seen }));
agent.kill();
