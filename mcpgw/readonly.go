package mcpgw

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"gatehouse/engine"
)

// Resources, resource templates and prompts of an upstream pass through
// read-only: reading a resource or getting a prompt changes nothing, so it
// is no proposal, but it is the upstream's, and mcp.{id}.use is the
// prerequisite of anything of an MCP server (seed: "an independent
// prerequisite"), so a session whose principal lacks it reads nothing of
// that upstream. Resources keep their URIs; prompts are named {id}.{name}
// like tools. An operator keeps them away from clients with hide_resources
// and hide_prompts.

// readOnly is what the gateway lists of an upstream besides tools.
type readOnly struct {
	resources []string // URIs
	templates []string // URI templates
	prompts   []string // gateway names
}

// syncReadOnly mirrors the upstream's resources, templates and prompts as
// listed now, withdrawing what it no longer lists (caller holds u.mu).
func (g *Gateway) syncReadOnly(ctx context.Context, u *upstream, cs *mcp.ClientSession) {
	old := u.readOnly
	g.server.RemoveResources(old.resources...)
	g.server.RemoveResourceTemplates(old.templates...)
	g.server.RemovePrompts(old.prompts...)
	u.readOnly = readOnly{}
	caps := cs.InitializeResult().Capabilities
	if caps == nil {
		return
	}
	if caps.Resources != nil && !u.cfg.HideResources {
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				g.log.Warn("mcp upstream: listing resources failed", "upstream", u.cfg.ID, "error", err)
				break
			}
			g.server.AddResource(r, u.readResource)
			u.readOnly.resources = append(u.readOnly.resources, r.URI)
		}
		for rt, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				g.log.Warn("mcp upstream: listing resource templates failed", "upstream", u.cfg.ID, "error", err)
				break
			}
			g.server.AddResourceTemplate(rt, u.readResource)
			u.readOnly.templates = append(u.readOnly.templates, rt.URITemplate)
		}
	}
	if caps.Prompts != nil && !u.cfg.HidePrompts {
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				g.log.Warn("mcp upstream: listing prompts failed", "upstream", u.cfg.ID, "error", err)
				break
			}
			name := p.Name
			mirrored := *p
			mirrored.Name = ToolName(u.cfg.ID, name)
			g.server.AddPrompt(&mirrored, u.getPrompt(name))
			u.readOnly.prompts = append(u.readOnly.prompts, mirrored.Name)
		}
	}
}

// mayRead is the read-only pass-through's one condition: the session's
// principal holds mcp.{id}.use.
func (u *upstream) mayRead(extra *mcp.RequestExtra) error {
	p, ok := principalOf(extra)
	if !ok {
		return fmt.Errorf("gatehouse: the request carries no authenticated principal")
	}
	if missing := engine.MissingScopes([]string{engine.MCPUseScope(u.cfg.ID)}, p.Scopes); len(missing) > 0 {
		return fmt.Errorf("gatehouse: reading from upstream %s needs scope %s", u.cfg.ID, missing[0])
	}
	return nil
}

func (u *upstream) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if err := u.mayRead(req.Extra); err != nil {
		return nil, err
	}
	cs, err := u.connect(ctx)
	if err != nil {
		return nil, err
	}
	return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: req.Params.URI})
}

func (u *upstream) getPrompt(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if err := u.mayRead(req.Extra); err != nil {
			return nil, err
		}
		cs, err := u.connect(ctx)
		if err != nil {
			return nil, err
		}
		return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: req.Params.Arguments})
	}
}
