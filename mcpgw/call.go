package mcpgw

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/service"
)

// callHandler is the handler of one classified upstream tool: every call
// is a proposed action of the session's run.
func (g *Gateway) callHandler(u *upstream, t Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p, ok := principalOf(req.Extra)
		if !ok {
			return nil, errors.New("gatehouse: the request carries no authenticated principal")
		}
		args, refused := decodeArguments(req.Params.Arguments)
		if refused != nil {
			return refused, nil
		}
		return g.session(req.Session, p).call(ctx, req, u, t, args)
	}
}

// decodeArguments reads the client's arguments as the JSON API would:
// numbers kept as their literals, so the hash the approval binds is the
// hash of what was sent. Arguments that are not one object are refused
// with a tool error before the gate (there is nothing to propose).
func decodeArguments(raw json.RawMessage) (map[string]any, *mcp.CallToolResult) {
	args := map[string]any{}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return args, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil || dec.More() {
		return nil, textError("gatehouse: the arguments are not one JSON object")
	}
	return args, nil
}

// call runs one tools/call through the gate.
func (s *session) call(ctx context.Context, req *mcp.CallToolRequest, u *upstream, t Tool, args map[string]any) (*mcp.CallToolResult, error) {
	key := pendingKey(t, args)
	if err := s.mu.lock(ctx); err != nil {
		return nil, err
	}
	if pc, ok := s.pending[key]; ok {
		// The same call again (the client left while it waited): wait
		// for the approval it already has; never a second card.
		s.mu.unlock()
		return s.awaitApproval(ctx, req, u, t, args, key, pc)
	}
	res, err := s.propose(ctx, u, t, args)
	if err != nil {
		s.mu.unlock()
		return s.failure(err)
	}
	switch res.Decision {
	case engine.DecisionAllow, engine.DecisionAllowWithModifications:
		defer s.mu.unlock()
		forwarded := sentArguments(req)
		if res.Decision == engine.DecisionAllowWithModifications {
			forwarded = res.EffectiveArguments
		}
		return s.forward(u, t, forwarded, s.runID, res.InvocationID), nil
	case engine.DecisionRequireApproval:
		pc := pendingCall{runID: s.runID, invocationID: res.InvocationID, approvalID: res.ApprovalID}
		s.pending[key] = pc
		s.mu.unlock()
		return s.awaitApproval(ctx, req, u, t, args, key, pc)
	default:
		s.mu.unlock()
		return denied(res.Result, t), nil
	}
}

// sentArguments are the arguments to forward: the client's bytes as they
// came, or none at all when it sent none or a JSON null (which the gate
// read as no arguments, and which upstreams refuse as not an object).
func sentArguments(req *mcp.CallToolRequest) any {
	if raw := bytes.TrimSpace(req.Params.Arguments); len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	return req.Params.Arguments
}

// pendingKey keys a parked call on its tool and normalized arguments (the
// session is the map's owner). Arguments the engine cannot normalize key
// on nothing: the gate denies them anyway.
func pendingKey(t Tool, args map[string]any) string {
	_, hash, err := engine.NormalizeArguments(args)
	if err != nil {
		return ""
	}
	return t.Spec.Name + "\x00" + hash
}

// propose proposes the call on the session's run (caller holds mu). A
// lease lost since the last call (the run was parked, or the heartbeat
// missed) is taken again once.
func (s *session) propose(ctx context.Context, u *upstream, t Tool, args map[string]any) (api.ProposeResult, error) {
	for attempt := 0; ; attempt++ {
		if err := s.ensureLease(ctx); err != nil {
			return api.ProposeResult{}, err
		}
		res, err := s.g.svc.Propose(ctx, s.principal, s.runID, s.lease, engine.ActionRequest{
			ActionID:    uuid.NewString(),
			Kind:        engine.ActionToolCall,
			Name:        t.Spec.Name,
			Summary:     fmt.Sprintf("MCP tool %s of upstream %s", t.Upstream, u.cfg.ID),
			Arguments:   args,
			OriginTrust: u.cfg.OriginTrust,
		})
		if errors.Is(err, service.ErrStaleLease) && attempt == 0 {
			s.held = false
			continue
		}
		if err != nil {
			return api.ProposeResult{}, err
		}
		s.afterProposal(res.RunStatus)
		return res, nil
	}
}

// forward sends an authorized call to the upstream once and records its
// outcome (caller holds mu, so the lease that authorized it records it).
func (s *session) forward(u *upstream, t Tool, args any, runID, invocationID string) *mcp.CallToolResult {
	res, out := u.call(t.Upstream, args)
	status := map[outcome]string{outcomeSucceeded: "succeeded", outcomeFailed: "failed", outcomeUncertain: "uncertain"}[out]
	ctx, cancel := context.WithTimeout(s.g.closing, 10*time.Second)
	defer cancel()
	if _, err := s.g.svc.RecordResult(ctx, s.principal, runID, invocationID, s.lease, status); err != nil {
		s.g.log.Warn("mcp call: recording the outcome failed", "run_id", runID, "invocation_id", invocationID, "status", status, "error", err)
	}
	switch {
	case out == outcomeUncertain:
		return textError("gatehouse: the upstream gave no answer (it stopped or timed out); the call may or may not have run. It is recorded as uncertain and is not retried.")
	case res == nil:
		return textError("gatehouse: the upstream refused or could not take the call; nothing ran.")
	}
	return res
}

// awaitApproval waits for a parked call's approval while the client
// waits, telling it (progress notifications) when the approval expires,
// then, once approved, revalidates and forwards the call exactly once.
// A client that leaves ends the wait, not the approval: the same call
// again finds it.
func (s *session) awaitApproval(ctx context.Context, req *mcp.CallToolRequest, u *upstream, t Tool, args map[string]any, key string, pc pendingCall) (*mcp.CallToolResult, error) {
	waitCtx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(s.ending, stop)()
	me, err := s.takeWait(ctx, key)
	if err != nil {
		return nil, err
	}
	resolution, err := s.waitResolution(waitCtx, req, key, pc)
	if err != nil {
		return nil, err
	}
	if err := s.mu.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.unlock()
	if cur, ok := s.pending[key]; !ok || cur.waiter != me {
		// The client called again: the newer wait answers it.
		return nil, errSuperseded
	}
	delete(s.pending, key)
	switch resolution.Status {
	case engine.ApprovalApproved:
	case engine.ApprovalExpired:
		return denied(nil, t, engine.ReasonApprovalExpired), nil
	case engine.ApprovalCancelled:
		return denied(nil, t, engine.ReasonApprovalCancelled), nil
	default:
		return denied(nil, t, engine.ReasonApprovalDenied), nil
	}
	if pc.runID != s.runID {
		return denied(nil, t, engine.ReasonApprovalInvalidated), nil
	}
	if !s.held {
		if _, err := s.claim(ctx); err != nil {
			return s.failure(err)
		}
	}
	_, version := s.agent()
	rr, err := s.g.svc.Resume(ctx, s.principal, pc.runID, pc.invocationID, s.lease, api.ResumeInput{Arguments: args, AgentVersion: version})
	if errors.Is(err, service.ErrStaleLease) {
		s.held = false
	}
	if err != nil {
		return s.failure(err)
	}
	s.afterProposal(rr.RunStatus)
	switch {
	case rr.Authorized:
		return s.forward(u, t, sentArguments(req), pc.runID, pc.invocationID), nil
	case rr.Result != nil:
		return denied(rr.Result, t), nil
	}
	return textError(fmt.Sprintf("gatehouse: this call's approval was already used (the invocation is %s); it is not run again.", rr.InvocationStatus)), nil
}

// waitResolution reads the run's events, from the run's first, until the
// approval is resolved, expired or cancelled, sending a progress
// notification per interval when the client asked for progress. Reading
// from the start costs a page per wait and spares every allowed call a
// watermark query before its proposal.
func (s *session) waitResolution(ctx context.Context, req *mcp.CallToolRequest, key string, pc pendingCall) (api.ApprovalResolution, error) {
	started := now()
	cursor := ""
	token := req.Params.GetProgressToken()
	for {
		evs, err := s.g.svc.ListEvents(ctx, s.principal, service.EventFilter{After: cursor, RunID: pc.runID, Limit: 500, Wait: s.g.cfg.ProgressInterval})
		if err != nil {
			return api.ApprovalResolution{}, err
		}
		if err := ctx.Err(); err != nil {
			return api.ApprovalResolution{}, err
		}
		for _, e := range evs {
			cursor = e.Cursor
			if r, ok := e.Resolution(); ok && r.ID == pc.approvalID {
				return r, nil
			}
			if expires, ok := requestedExpiry(e, pc.approvalID); ok {
				pc.expiresAt = expires
				s.noteExpiry(key, expires)
			}
		}
		if token != nil {
			s.progress(ctx, req, token, pc, started)
		}
	}
}

// errSuperseded ends a wait the client left and replaced by calling again.
var errSuperseded = errors.New("gatehouse: this call was made again in the session; the newer call gets the result")

// takeWait makes the caller the wait that answers the parked call key;
// errSuperseded when another wait has already answered it.
func (s *session) takeWait(ctx context.Context, key string) (uint64, error) {
	if err := s.mu.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.unlock()
	pc, ok := s.pending[key]
	if !ok {
		return 0, errSuperseded
	}
	s.waiters++
	pc.waiter = s.waiters
	s.pending[key] = pc
	return s.waiters, nil
}

func requestedExpiry(e api.Event, approvalID string) (time.Time, bool) {
	if e.Type != api.EventApprovalRequested {
		return time.Time{}, false
	}
	p, err := e.DecodePayload()
	if err != nil {
		return time.Time{}, false
	}
	rp, ok := p.(api.ApprovalRequestedPayload)
	return rp.ExpiresAt, ok && rp.ApprovalID == approvalID
}

func (s *session) noteExpiry(key string, expires time.Time) {
	if err := s.mu.lock(context.Background()); err != nil {
		return
	}
	defer s.mu.unlock()
	if pc, ok := s.pending[key]; ok {
		pc.expiresAt = expires
		s.pending[key] = pc
	}
}

// progress tells the client the call still waits, and until when: the
// total is the seconds from the start of the wait to the approval's
// expiry, so a client showing progress shows the deadline.
func (s *session) progress(ctx context.Context, req *mcp.CallToolRequest, token any, pc pendingCall, started time.Time) {
	elapsed := now().Sub(started).Seconds()
	p := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: elapsed,
		Message: "waiting for a human to approve in the Gatehouse console (approval " + pc.approvalID + ")"}
	if !pc.expiresAt.IsZero() {
		p.Total = max(pc.expiresAt.Sub(started).Seconds(), elapsed)
		p.Message += "; expires at " + pc.expiresAt.UTC().Format(time.RFC3339)
	}
	if err := req.Session.NotifyProgress(ctx, p); err != nil {
		s.g.log.Debug("mcp call: progress notification failed", "error", err)
	}
}

// denied is the gate's thin denial result as a tool error: the six fields
// of engine.DenialResult as structured content and as JSON text, nothing
// of the policy behind it. A nil result is built from reason.
func denied(r *engine.DenialResult, t Tool, reason ...string) *mcp.CallToolResult {
	if r == nil {
		code := engine.ReasonApprovalDenied
		if len(reason) > 0 {
			code = reason[0]
		}
		d := engine.Denial(t.Spec.Name, code, nil)
		r = &d
	}
	b, _ := json.Marshal(r) // six strings and a bool: cannot fail
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: r}
}

func textError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// failure answers a call the gateway could not take through the gate: a
// tool error the model can read for the expected cases, an internal error
// (logged, not shown) for the rest.
func (s *session) failure(err error) (*mcp.CallToolResult, error) {
	switch {
	case errors.Is(err, errBusy):
		return textError("gatehouse: " + errBusy.Error() + "; call again once it is resolved."), nil
	case errors.Is(err, service.ErrUnavailable), service.IsUnavailable(err):
		return textError("gatehouse: the gate is unavailable; nothing ran. Retry later."), nil
	case errors.Is(err, context.Canceled):
		return nil, err
	}
	s.g.log.Error("mcp call: the gate failed", "run_id", s.runID, "error", err)
	return nil, errors.New("gatehouse: internal error; nothing ran")
}
