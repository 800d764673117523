package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DemoServer is the small MCP server `console mcp demo-upstream` serves on
// stdio and `make run` puts behind the gateway: a notebook in memory, so a
// newcomer sees an allowed read, a write that waits for approval and a
// tool nobody classified (hidden). onCall, when set, sees every call that
// reached it (tests count forwards with it).
func DemoServer(onCall func(tool string, args json.RawMessage)) *mcp.Server {
	d := &demo{notes: map[string]string{}, onCall: onCall}
	s := mcp.NewServer(&mcp.Implementation{Name: "gatehouse-demo-upstream", Version: "0.1"}, nil)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	d.add(s, &mcp.Tool{Name: "echo", Description: "Echo a message back.", Annotations: readOnly,
		InputSchema: schema(map[string]string{"message": "string"})}, func(a map[string]string) (string, bool) {
		return a["message"], false
	})
	d.add(s, &mcp.Tool{Name: "list_notes", Description: "List the notebook's note titles.", Annotations: readOnly,
		InputSchema: schema(nil)}, func(map[string]string) (string, bool) {
		return d.titles(), false
	})
	d.add(s, &mcp.Tool{Name: "add_note", Description: "Add a note to the shared notebook.",
		InputSchema: schema(map[string]string{"title": "string", "body": "string"})}, func(a map[string]string) (string, bool) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.notes[a["title"]] = a["body"]
		return "added note " + a["title"], false
	})
	d.add(s, &mcp.Tool{Name: "describe_url", Description: "Split a URL into its parts (it fetches nothing).", Annotations: readOnly,
		InputSchema: schema(map[string]string{"url": "string"})}, func(a map[string]string) (string, bool) {
		u, err := url.Parse(a["url"])
		if err != nil {
			return "not a URL", true
		}
		return fmt.Sprintf("scheme %s, host %s, path %s", u.Scheme, u.Host, u.Path), false
	})
	d.add(s, &mcp.Tool{Name: "export_notebook", Description: "Send the whole notebook to an address (the operator did not classify this one).",
		InputSchema: schema(map[string]string{"to": "string"})}, func(a map[string]string) (string, bool) {
		return "exported to " + a["to"], false
	})
	s.AddResource(&mcp.Resource{URI: "notes://index", Name: "index", Description: "The notebook's note titles.", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: d.titles()}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "summarize_notes", Description: "Ask for a summary of the notebook."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarize these notes:\n" + d.titles()}}}}, nil
		})
	return s
}

type demo struct {
	mu     sync.Mutex
	notes  map[string]string
	onCall func(string, json.RawMessage)
}

func (d *demo) titles() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ts []string
	for t := range d.notes {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	return strings.Join(ts, "\n")
}

// add registers a tool whose fn answers a text and whether it is an error.
func (d *demo) add(s *mcp.Server, t *mcp.Tool, fn func(map[string]string) (string, bool)) {
	s.AddTool(t, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if d.onCall != nil {
			d.onCall(t.Name, req.Params.Arguments)
		}
		args, ok := stringArguments(req.Params.Arguments)
		if !ok {
			return textError("arguments must be an object of strings"), nil
		}
		out, isError := fn(args)
		return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: out}}}, nil
	})
}

func stringArguments(raw json.RawMessage) (map[string]string, bool) {
	args := map[string]string{}
	if len(raw) == 0 {
		return args, true
	}
	return args, json.Unmarshal(raw, &args) == nil
}

// schema is an object schema of string properties.
func schema(props map[string]string) map[string]any {
	p := map[string]any{}
	for name, typ := range props {
		p[name] = map[string]any{"type": typ}
	}
	return map[string]any{"type": "object", "properties": p}
}
