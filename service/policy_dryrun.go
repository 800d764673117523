package service

import (
	"time"

	"gatehouse/engine"
)

// Ids of the synthetic run a dry run gates for; nothing is stored under
// them.
const (
	dryRunID        = "00000000-0000-4000-8000-000000000001"
	dryRunSessionID = "00000000-0000-4000-8000-000000000002"
)

// DryRun gates req as a proposal of a run whose principal holds scopes,
// against rs, and stores nothing: the decision `console policy eval`
// prints and the console's policy page shows for each tool. It needs no
// database.
func DryRun(cat *engine.Catalog, rs *engine.LoadedRuleset, req engine.ActionRequest, scopes []string, now time.Time) engine.GateOutcome {
	run := engine.RunSnapshot{ID: dryRunID, SessionID: dryRunSessionID, PrincipalScopes: scopes, PolicyProfile: rs.ProfileName()}
	return engine.Gate(req, cat, run, engine.Principal{ID: "policy-dry-run", Scopes: scopes}, rs, now)
}
