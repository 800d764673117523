package api

import "gatehouse/engine"

// The engine's vocabulary a client writes requests in, named here so that
// a client imports the contract alone (engine stays its only dependency).
type (
	// ActionRequest is a proposal as an agent sends it.
	ActionRequest = engine.ActionRequest
	// ApprovalResolutionType is how a human resolves an approval.
	ApprovalResolutionType = engine.ApprovalResolutionType
)
