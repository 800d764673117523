package mcpgw

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/service"
)

// session is a client session's Gatehouse side: one Gatehouse session id,
// and the run the gateway submitted and claimed for the session's
// principal (a new one when the last ended: an expired approval fails its
// run, the breaker fails it after three identical denials). The mutex
// serializes the calls that use the lease; waits for approval happen
// outside it.
type session struct {
	g         *Gateway
	ss        *mcp.ServerSession
	principal engine.Principal
	sessionID string // the Gatehouse session_id of every run of this client session
	// ending is done once the client session is being closed: waits for
	// approval stop, since the SDK closes a session only after its calls
	// in flight returned.
	ending    context.Context
	stopWaits context.CancelFunc

	mu      chanMutex
	runID   string
	lease   api.Lease
	held    bool                   // the gateway holds the run's lease
	pending map[string]pendingCall // calls waiting for approval, by session + tool + arguments
	waiters uint64                 // numbers each wait, so the latest one takes a parked call
}

// pendingCall is a call parked for approval. A client that left and calls
// again with the same tool and arguments in the same session finds it.
type pendingCall struct {
	runID        string
	invocationID string
	approvalID   string
	expiresAt    time.Time
	// waiter is the wait that answers the call: the latest, so a client
	// that called again gets the result, not the wait it left.
	waiter uint64
}

// chanMutex is a mutex a waiter can give up on when its context ends.
type chanMutex chan struct{}

func (m chanMutex) lock(ctx context.Context) error {
	select {
	case m <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m chanMutex) unlock() { <-m }

func newSession(g *Gateway, ss *mcp.ServerSession, p engine.Principal) *session {
	ending, endNow := context.WithCancel(g.closing)
	return &session{g: g, ss: ss, principal: p, sessionID: uuid.NewString(), mu: make(chanMutex, 1), pending: map[string]pendingCall{},
		ending: ending, stopWaits: endNow}
}

// errBusy: the session's run waits for a human on another call.
var errBusy = errors.New("another call of this session is waiting for approval")

// agent names the client in runs: its MCP clientInfo.
func (s *session) agent() (id, version string) {
	id, version = "mcp-client", "unknown"
	if ip := s.ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
		if ip.ClientInfo.Name != "" {
			id = "mcp:" + truncate(ip.ClientInfo.Name, 150)
		}
		if ip.ClientInfo.Version != "" {
			version = truncate(ip.ClientInfo.Version, 150)
		}
	}
	return id, version
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// ensureLease makes the session hold a RUNNING run (caller holds mu):
// the one it has, claimed again when it was parked and is queued again, or
// a new one when it ended. errBusy when it waits for approval.
func (s *session) ensureLease(ctx context.Context) error {
	if s.held {
		return nil
	}
	if s.runID != "" {
		ok, err := s.claim(ctx)
		if err != nil || ok {
			return err
		}
		run, err := s.g.svc.GetRun(ctx, s.principal, s.runID)
		if err != nil {
			return err
		}
		switch run.Status {
		case api.RunWaitingForApproval, api.RunRunning, api.RunQueued:
			return errBusy
		}
	}
	agentID, version := s.agent()
	run, err := s.g.svc.SubmitRun(ctx, s.principal, api.SubmitRunInput{SessionID: s.sessionID, AgentID: agentID, AgentVersion: version})
	if err != nil {
		return err
	}
	s.runID = run.ID
	ok, err := s.claim(ctx)
	if err == nil && !ok {
		err = fmt.Errorf("mcpgw: the run just submitted could not be claimed: %w", service.ErrConflict)
	}
	return err
}

func (s *session) claim(ctx context.Context) (bool, error) {
	run, ok, err := s.g.svc.ClaimRun(ctx, s.principal, api.ClaimInput{WorkerID: s.g.workerID, LeaseSeconds: s.g.leaseSeconds, RunID: s.runID})
	if err != nil || !ok {
		return false, err
	}
	s.lease, s.held = api.Lease{WorkerID: run.WorkerID, FencingToken: run.FencingToken}, true
	return true, nil
}

// afterProposal notes what a proposal did to the run: parking or failing
// it releases the lease.
func (s *session) afterProposal(runStatus string) {
	if runStatus != api.RunRunning {
		s.held = false
	}
}

// keepLease heartbeats the run's lease while the client session lives.
func (s *session) keepLease(ctx context.Context, done <-chan struct{}) {
	t := time.NewTicker(time.Duration(s.g.leaseSeconds) * time.Second / 3)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			s.heartbeat(ctx)
		}
	}
}

func (s *session) heartbeat(ctx context.Context) {
	if err := s.mu.lock(ctx); err != nil {
		return
	}
	defer s.mu.unlock()
	if !s.held {
		return
	}
	if _, err := s.g.svc.Heartbeat(ctx, s.principal, s.runID, s.lease, s.g.leaseSeconds); err != nil {
		s.held = false
		s.g.log.Warn("mcp session: heartbeat lost the run's lease", "run_id", s.runID, "error", err)
	}
}

// end closes the session's run when the client session ended: completed
// when the gateway holds it or can claim it back, else (parked for a
// human) cancelled, so its cards leave the queue.
func (s *session) end() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.mu.lock(ctx); err != nil {
		return
	}
	defer s.mu.unlock()
	if s.runID == "" {
		return
	}
	held := s.held
	if !held {
		var err error
		if held, err = s.claim(ctx); err != nil {
			s.g.log.Warn("mcp session end: claiming the run failed", "run_id", s.runID, "error", err)
		}
	}
	if held {
		if _, err := s.g.svc.CompleteRun(ctx, s.principal, s.runID, s.lease, "completed"); err != nil {
			s.g.log.Warn("mcp session end: completing the run failed", "run_id", s.runID, "error", err)
		}
		s.held = false
		return
	}
	run, err := s.g.svc.GetRun(ctx, s.principal, s.runID)
	if err != nil || run.Status != api.RunWaitingForApproval {
		return
	}
	if _, err := s.g.svc.CancelRun(ctx, s.principal, s.runID); err != nil {
		// Without run.cancel the approvals stay until they expire.
		s.g.log.Warn("mcp session end: cancelling the parked run failed", "run_id", s.runID, "error", err)
	}
}
