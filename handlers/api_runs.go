package handlers

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/engine"
)

// principal is the authenticated principal; the auth middleware guarantees
// one on every /v1 route that calls this.
func principal(c echo.Context) engine.Principal {
	p, _ := principalOf(c)
	return p
}

func (s *Server) runSubmit(c echo.Context) error {
	var in api.SubmitRunInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	run, err := s.cfg.Service.SubmitRun(c.Request().Context(), principal(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, run)
}

func (s *Server) runGet(c echo.Context) error {
	run, err := s.cfg.Service.GetRun(c.Request().Context(), principal(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// runClaim answers 204 when there is nothing to claim.
func (s *Server) runClaim(c echo.Context) error {
	var in api.ClaimInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	run, ok, err := s.cfg.Service.ClaimRun(c.Request().Context(), principal(c), in)
	if err != nil {
		return err
	}
	if !ok {
		return c.NoContent(http.StatusNoContent)
	}
	return c.JSON(http.StatusOK, run)
}

func (s *Server) runHeartbeat(c echo.Context) error {
	var in api.HeartbeatRequest
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	run, err := s.cfg.Service.Heartbeat(c.Request().Context(), principal(c), c.Param("id"), in.Lease, in.LeaseSeconds)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// actionPropose answers a proposal. An action the strict decoder refuses
// for its shape (a field of the wrong type or range, a field the schema
// does not have) is still a proposal when its action_id and the lease can
// be read: the seed answers it DENY policy.unclassifiable_action, recorded
// so the model reads a denial and the circuit breaker counts it. Only a
// body that cannot be read as a proposal at all stays a 400: not JSON,
// bytes the strict decoder refuses (duplicate keys, invalid UTF-8, NUL), no
// action, no usable action_id, a malformed lease.
func (s *Server) actionPropose(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	ctx, p, runID := c.Request().Context(), principal(c), c.Param("id")
	var in api.ProposeRequest
	var res api.ProposeResult
	if decodeErr := decodeBody(body, &in); decodeErr != nil {
		readable, ok := readableProposal(body)
		if !ok {
			return decodeErr
		}
		res, err = s.cfg.Service.ProposeUnreadable(ctx, p, runID, readable.Lease, readable.Action)
	} else {
		res, err = s.cfg.Service.Propose(ctx, p, runID, in.Lease, in.Action)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// readableProposal reads what it can of a proposal the strict decoder
// refused: the lease and the action's object strictly (so bytes the strict
// decoder refuses never get through), then each action field on its own,
// keeping those that decode. ok=false when there is nothing to key a
// record on: no lease, no action object or no uuid action_id.
func readableProposal(body []byte) (api.ProposeRequest, bool) {
	var env struct {
		api.Lease
		Action json.RawMessage `json:"action"`
	}
	var fields map[string]json.RawMessage
	var id string
	if engine.DecodeStrict(body, &env) != nil || engine.DecodeStrict(env.Action, &fields) != nil ||
		json.Unmarshal(fields["action_id"], &id) != nil || !engine.ValidUUID(id) {
		return api.ProposeRequest{}, false
	}
	out := api.ProposeRequest{Lease: env.Lease}
	for name, raw := range fields {
		one, err := json.Marshal(map[string]json.RawMessage{name: raw})
		if err != nil {
			continue
		}
		// Probe first: a field that fails may leave part of itself set.
		var probe engine.ActionRequest
		if engine.DecodeStrict(one, &probe) == nil {
			_ = engine.DecodeStrict(one, &out.Action)
		}
	}
	if refuseNUL(&out, "json") != nil {
		return api.ProposeRequest{}, false
	}
	return out, true
}

func (s *Server) invocationResume(c echo.Context) error {
	var in api.ResumeRequest
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	res, err := s.cfg.Service.Resume(c.Request().Context(), principal(c), c.Param("id"), c.Param("inv"), in.Lease, in.ResumeInput)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

func (s *Server) invocationResult(c echo.Context) error {
	var in api.StatusRequest
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	inv, err := s.cfg.Service.RecordResult(c.Request().Context(), principal(c), c.Param("id"), c.Param("inv"), in.Lease, in.Status)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, inv)
}

func (s *Server) runComplete(c echo.Context) error {
	var in api.StatusRequest
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	run, err := s.cfg.Service.CompleteRun(c.Request().Context(), principal(c), c.Param("id"), in.Lease, in.Status)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// runCancel takes no body; any body sent is ignored.
func (s *Server) runCancel(c echo.Context) error {
	run, err := s.cfg.Service.CancelRun(c.Request().Context(), principal(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}
