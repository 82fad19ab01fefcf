'use strict';
// A minimal VS Code extension over mcpd: "mcpd: List servers and tools"
// shows every server and its tools; "mcpd: Call a tool" picks one, asks for
// its arguments as JSON and shows the result, with progress and a Cancel
// button that reaches the server as notifications/cancelled.

const vscode = require('vscode');
const view = require('./mcpd-view');

function activate(context) {
  const client = view.connect();
  const out = vscode.window.createOutputChannel('mcpd');
  context.subscriptions.push(out, { dispose: () => client.close() });

  context.subscriptions.push(vscode.commands.registerCommand('mcpd.listServers', async () => {
    try {
      out.clear();
      for (const line of view.format(await view.overview(client))) out.appendLine(line);
      out.show(true);
    } catch (err) {
      vscode.window.showErrorMessage(err.message);
    }
  }));

  context.subscriptions.push(vscode.commands.registerCommand('mcpd.callTool', async () => {
    try {
      const rows = await view.overview(client);
      const picks = rows.flatMap((r) => r.tools.map((t) => ({ label: t, description: r.name, server: r.name })));
      const pick = await vscode.window.showQuickPick(picks, { placeHolder: 'Tool to call' });
      if (!pick) return;
      const json = await vscode.window.showInputBox({ prompt: `Arguments of ${pick.label} (JSON)`, value: '{}' });
      if (json === undefined) return;
      const text = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `${pick.server}: ${pick.label}`, cancellable: true },
        (progress, token) => {
          const ac = new AbortController();
          token.onCancellationRequested(() => ac.abort());
          return view.call(client, pick.server, pick.label, JSON.parse(json), {
            signal: ac.signal,
            onProgress: (p) => progress.report({ message: p.message || `${p.progress}${p.total ? `/${p.total}` : ''}` }),
          });
        });
      out.appendLine(text);
      out.show(true);
    } catch (err) {
      vscode.window.showErrorMessage(err.message);
    }
  }));
}

function deactivate() {}

module.exports = { activate, deactivate };
