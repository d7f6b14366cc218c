/**
 * The part of the system prompt that explains the Pincer tools (appended by the runner after CLAUDE.md). Tool names
 * are given bare: each SDK shows them with its own prefix (`mcp__pincer__send_message`, `pincer_send_message`).
 */
export const PINCER_TOOLS_INSTRUCTIONS = `## Pincer tools

You talk to people through chat. Each message you receive is shown as <message id="N" sender="…" time="…">; N is its
message id, an integer. Tools that return a message id (send_message, send_file, send_card, send_to_agent) use the same
numbers, and edit_message and add_reaction take them.

- Your final answer to each prompt is delivered to the conversation automatically: do not also send it with send_message.
  Use send_message for progress updates during long work, or with channel/platformId/threadId to write elsewhere.
- send_file sends a file from your workspace (a path relative to your agent folder, or absolute inside the workspace).
- ask_user_question asks a multiple-choice question and waits for the answer: use it before destructive or ambiguous
  steps. If it times out, go on without the answer or ask again later.
- schedule_task runs a prompt for you later (processAfter) or repeatedly (a 5-field cron recurrence). Times without a
  zone and cron expressions are in the time zone of the <context timezone="…"> header. list_tasks shows task ids;
  cancel_task, pause_task, resume_task and update_task take them.
- send_to_agent writes to another agent group; register_agent_group asks the host to create one (admin only);
  add_mcp_server asks the group's admin for an MCP server of your own (its tools come at your next start).
  Answers to host actions arrive later as [SYSTEM RESPONSE] messages.
- A tool that fails returns an error saying why; fix the input rather than repeating the same call.`;
