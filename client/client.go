// Package client is a small Go client of Gatehouse's JSON API for agent
// runtimes and scripts. It reuses the server's wire types (package api), so
// the two cannot drift, and links nothing of the server: no database
// driver, YAML parser or rules loader.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"gatehouse/api"
)

// Client calls one Gatehouse server as one principal.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// New returns a client of the server at baseURL authenticating with token.
// A nil hc uses a client with no overall timeout: contexts bound each call,
// and event long-polls last up to 30 s.
func New(baseURL, token string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q is not an http(s) URL", baseURL)
	}
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{base: u, token: token, http: hc}, nil
}

// Error is a non-2xx answer: the status, the API's error code and message,
// and on a resolve conflict the stored approval.
type Error struct {
	Status   int
	Code     string
	Message  string
	Approval *api.Approval
}

func (e *Error) Error() string {
	return fmt.Sprintf("gatehouse: %d %s: %s", e.Status, e.Code, e.Message)
}

// IsCode reports whether err is an *Error with the given API code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// do sends one request; out (if not nil) receives a 2xx body. It returns
// the status so callers can tell 200 from 204.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) (int, error) {
	u := c.base.JoinPath(path)
	u.RawQuery = query.Encode()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("client: encoding %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return 0, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return resp.StatusCode, decodeError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, resp.Body) // drain so the connection is reused
		return resp.StatusCode, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return resp.StatusCode, fmt.Errorf("client: decoding %s %s: %w", method, path, err)
	}
	return resp.StatusCode, nil
}

func decodeError(resp *http.Response) error {
	e := &Error{Status: resp.StatusCode}
	var body api.ErrorBody
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(raw, &body) == nil && body.Error.Code != "" {
		e.Code, e.Message, e.Approval = body.Error.Code, body.Error.Message, body.Approval
	} else {
		e.Code, e.Message = "http_"+strconv.Itoa(resp.StatusCode), http.StatusText(resp.StatusCode)
	}
	return e
}

// Policy describes the loaded default policy.
func (c *Client) Policy(ctx context.Context) (api.Policy, error) {
	var out api.Policy
	_, err := c.do(ctx, http.MethodGet, "/v1/policy", nil, nil, &out)
	return out, err
}

// Tools lists the catalog.
func (c *Client) Tools(ctx context.Context) ([]api.Tool, error) {
	var out api.ToolList
	_, err := c.do(ctx, http.MethodGet, "/v1/tools", nil, nil, &out)
	return out.Tools, err
}

// SubmitRun creates a QUEUED run stamped with the principal's scopes.
func (c *Client) SubmitRun(ctx context.Context, in api.SubmitRunInput) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, http.MethodPost, "/v1/runs", nil, in, &out)
	return out, err
}

// GetRun reads a run.
func (c *Client) GetRun(ctx context.Context, runID string) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(runID), nil, nil, &out)
	return out, err
}

// Claim takes a lease on a claimable run; ok is false when there is none.
func (c *Client) Claim(ctx context.Context, in api.ClaimInput) (run api.Run, ok bool, err error) {
	status, err := c.do(ctx, http.MethodPost, "/v1/runs/claim", nil, in, &run)
	return run, err == nil && status == http.StatusOK, err
}

// Heartbeat extends the lease; leaseSeconds 0 keeps the server's default.
func (c *Client) Heartbeat(ctx context.Context, runID string, lease api.Lease, leaseSeconds int) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, http.MethodPost, runPath(runID, "heartbeat"), nil, api.HeartbeatRequest{Lease: lease, LeaseSeconds: leaseSeconds}, &out)
	return out, err
}

// Propose asks the gate about an action.
func (c *Client) Propose(ctx context.Context, runID string, lease api.Lease, action api.ActionRequest) (api.ProposeResult, error) {
	var out api.ProposeResult
	_, err := c.do(ctx, http.MethodPost, runPath(runID, "actions"), nil, api.ProposeRequest{Lease: lease, Action: action}, &out)
	return out, err
}

// Resume re-presents an approved invocation for revalidation.
func (c *Client) Resume(ctx context.Context, runID, invocationID string, lease api.Lease, in api.ResumeInput) (api.ResumeResult, error) {
	var out api.ResumeResult
	_, err := c.do(ctx, http.MethodPost, invocationPath(runID, invocationID, "resume"), nil, api.ResumeRequest{Lease: lease, ResumeInput: in}, &out)
	return out, err
}

// Result records an invocation's outcome: succeeded, failed or uncertain.
func (c *Client) Result(ctx context.Context, runID, invocationID string, lease api.Lease, status string) (api.Invocation, error) {
	var out api.Invocation
	_, err := c.do(ctx, http.MethodPost, invocationPath(runID, invocationID, "result"), nil, api.StatusRequest{Lease: lease, Status: status}, &out)
	return out, err
}

// Complete finishes a run: completed or failed.
func (c *Client) Complete(ctx context.Context, runID string, lease api.Lease, status string) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, http.MethodPost, runPath(runID, "complete"), nil, api.StatusRequest{Lease: lease, Status: status}, &out)
	return out, err
}

// Cancel cancels a run and its pending approvals.
func (c *Client) Cancel(ctx context.Context, runID string) (api.Run, error) {
	var out api.Run
	_, err := c.do(ctx, http.MethodPost, runPath(runID, "cancel"), nil, nil, &out)
	return out, err
}

// ApprovalQuery selects approvals; Status "" is pending.
type ApprovalQuery struct {
	Status    string // pending, resolved, or one status
	RunID     string
	SessionID string
	Limit     int
	Cursor    string
}

// ListApprovals returns one page; pass NextCursor back for the next.
func (c *Client) ListApprovals(ctx context.Context, q ApprovalQuery) (api.ApprovalPage, error) {
	v := url.Values{}
	setNonEmpty(v, "status", q.Status)
	setNonEmpty(v, "run_id", q.RunID)
	setNonEmpty(v, "session_id", q.SessionID)
	setNonEmpty(v, "cursor", q.Cursor)
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out api.ApprovalPage
	_, err := c.do(ctx, http.MethodGet, "/v1/approvals", v, nil, &out)
	return out, err
}

// GetApproval reads one approval.
func (c *Client) GetApproval(ctx context.Context, id string) (api.Approval, error) {
	var out api.Approval
	_, err := c.do(ctx, http.MethodGet, "/v1/approvals/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// Resolve resolves an approval. On a conflict the *Error carries the
// stored approval.
func (c *Client) Resolve(ctx context.Context, id string, resolution api.ApprovalResolutionType, reason string) (api.Approval, error) {
	var out api.Approval
	_, err := c.do(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(id)+"/resolve", nil, api.ResolveRequest{Resolution: resolution, Reason: reason}, &out)
	return out, err
}

// EventQuery selects events after a watermark; Wait (seconds, up to 30)
// long-polls when none is there yet.
type EventQuery struct {
	After string // a page's watermark or an event's cursor; "" is the start
	RunID string
	Limit int
	Wait  int
}

// Events returns events after q.After and the watermark for the next call.
func (c *Client) Events(ctx context.Context, q EventQuery) (api.EventPage, error) {
	v := url.Values{}
	setNonEmpty(v, "after", q.After)
	setNonEmpty(v, "run_id", q.RunID)
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Wait > 0 {
		v.Set("wait", strconv.Itoa(q.Wait))
	}
	var out api.EventPage
	_, err := c.do(ctx, http.MethodGet, "/v1/events", v, nil, &out)
	return out, err
}

// WaitForResolution waits until the approval leaves PENDING (approved,
// denied, expired or cancelled) or ctx ends, and returns how it was
// resolved, as its approval.resolved event records it. It needs only
// run.read, which an agent holds and approval.read it usually does not: it
// reads the run's events from the beginning (so a resolution before the
// call is found too) and long-polls for that event. GetApproval, with
// approval.read, has the rest of the approval.
func (c *Client) WaitForResolution(ctx context.Context, runID, approvalID string) (api.ApprovalResolution, error) {
	var after string
	for {
		page, err := c.Events(ctx, EventQuery{After: after, RunID: runID, Limit: 500, Wait: 25})
		if err != nil {
			return api.ApprovalResolution{}, err
		}
		for _, e := range page.Events {
			if r, ok := e.Resolution(); ok && r.ID == approvalID {
				return r, nil
			}
		}
		after = page.Watermark
	}
}

func runPath(runID, verb string) string { return "/v1/runs/" + url.PathEscape(runID) + "/" + verb }

func invocationPath(runID, invID, verb string) string {
	return "/v1/runs/" + url.PathEscape(runID) + "/invocations/" + url.PathEscape(invID) + "/" + verb
}

func setNonEmpty(v url.Values, k, val string) {
	if val != "" {
		v.Set(k, val)
	}
}
