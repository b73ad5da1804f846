// A small MCP Apps host for the memory card's browser tests: the official MCP client over streamable
// HTTP to a real `symbiote serve` (declaring the apps extension), and ext-apps' AppBridge talking to the
// card in a sandboxed iframe. It does what a chat client does when a tool names a `ui://` view: calls
// the tool, reads the view, renders it, passes the call's input and result, and forwards the view's
// own tool calls to the server. Bundled by esbuild at test time (tests/e2e/card/conftest.py).

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  getToolUiResourceUri,
  isToolVisibilityModelOnly,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const EXTENSION_ID = "io.modelcontextprotocol/ui";
const HOST_INFO = { name: "symbiote-card-test-host", version: "1.0.0" };

class TestHost {
  constructor() {
    this.client = null;
    this.tools = new Map();
    this.bridge = null;
    this.calls = []; // the view's tool calls as forwarded: {name, arguments, isError}
    this.resource = null; // the last view resource read: {uri, mimeType, meta}
    this.theme = "light";
  }

  /** Connects to the server's /mcp (same origin) with an API key, declaring the apps extension. */
  async connect(apiKey) {
    const transport = new StreamableHTTPClientTransport(new URL("/mcp", location.origin), {
      requestInit: { headers: { Authorization: `Bearer ${apiKey}` } },
    });
    this.client = new Client(HOST_INFO, {
      capabilities: { extensions: { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } } },
    });
    await this.client.connect(transport);
    await this.refreshTools();
  }

  async refreshTools() {
    const listed = await this.client.listTools();
    this.tools = new Map(listed.tools.map((tool) => [tool.name, tool]));
  }

  /** Sets the theme of the host page, and of the card shown now (host-context-changed). */
  setTheme(theme) {
    this.theme = theme;
    document.documentElement.dataset.theme = theme;
    document.documentElement.style.colorScheme = theme;
    if (this.bridge) this.bridge.sendHostContextChange({ theme });
  }

  /**
   * Calls `name` with `args` as the model would, then shows the tool's view with the call's input and
   * result. Resolves with the tool's result once the view has been handed it. `styles` are host CSS
   * variables (McpUiStyles) for the view to follow.
   */
  async show(name, args, { theme, styles } = {}) {
    if (theme) this.setTheme(theme);
    if (!this.tools.has(name)) await this.refreshTools();
    const tool = this.tools.get(name);
    if (!tool) throw new Error(`the server lists no tool ${name}`);
    const uri = getToolUiResourceUri(tool);
    if (!uri?.startsWith("ui://")) throw new Error(`${name} names no ui:// view`);
    const called = this.client.callTool({ name, arguments: args });

    const read = await this.client.readResource({ uri });
    const content = read.contents[0];
    if (content.mimeType !== RESOURCE_MIME_TYPE) throw new Error(`${uri} is ${content.mimeType}`);
    this.resource = { uri, mimeType: content.mimeType, meta: content._meta ?? null };

    await this.unmount();
    const iframe = document.createElement("iframe");
    iframe.id = "card";
    iframe.title = "Memory card";
    iframe.setAttribute("sandbox", "allow-scripts");
    document.getElementById("frames").replaceChildren(iframe);

    const bridge = new AppBridge(
      this.client,
      HOST_INFO,
      { serverTools: {}, serverResources: {}, logging: {} },
      {
        hostContext: {
          theme: this.theme,
          platform: "web",
          displayMode: "inline",
          availableDisplayModes: ["inline"],
          locale: "en-GB",
          timeZone: "UTC",
          toolInfo: { tool },
          ...(styles ? { styles: { variables: styles } } : {}),
        },
      },
    );
    this.bridge = bridge;
    bridge.onsizechange = ({ height }) => {
      if (height) iframe.style.height = `${Math.ceil(height)}px`;
    };
    const initialized = new Promise((resolve) => {
      bridge.oninitialized = () => resolve();
    });
    await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
    // A host forwards only the tools a view may call: those not kept for the model alone. (Wrapping the
    // bridge's own forwarding makes it warn that its handler was replaced: expected.)
    const forward = bridge.oncalltool;
    bridge.oncalltool = async (params, extra) => {
      const target = this.tools.get(params.name);
      if (!target || isToolVisibilityModelOnly(target)) throw new Error(`the host keeps ${params.name} from the view`);
      const result = await forward(params, extra);
      this.calls.push({ name: params.name, arguments: params.arguments, isError: Boolean(result.isError) });
      return result;
    };
    iframe.srcdoc = content.text;

    await initialized;
    await bridge.sendToolInput({ arguments: args });
    const result = await called;
    await bridge.sendToolResult(result);
    iframe.dataset.state = "shown";
    return result;
  }

  async unmount() {
    if (!this.bridge) return;
    const bridge = this.bridge;
    this.bridge = null;
    try {
      await bridge.teardownResource({});
    } finally {
      await bridge.close();
    }
  }

  async close() {
    await this.unmount();
    await this.client?.close();
  }
}

window.testHost = new TestHost();
document.documentElement.dataset.hostReady = "1";
